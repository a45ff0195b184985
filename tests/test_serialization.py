"""dynjit.save / dynjit.load: round trips of tensors (every dtype, views sharing memory),
state dicts, optimizer state and nested containers; weights_only; map_location; paths,
path-likes and file objects; clear errors on corrupt, truncated and foreign files."""
import collections
import io
import json
import pathlib
import pickle
import zipfile

import numpy as np
import pytest

import dynjit
from dynjit import nn
from dynjit._dtype import _ALL as ALL_DTYPES
from dynjit.serialization import CheckpointError


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    dynjit.save(obj, buf)
    buf.seek(0)
    return dynjit.load(buf, **load_kwargs)


def same(a, b):
    return (a.dtype is b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
            and np.array_equal(a.detach().numpy(), b.detach().numpy(), equal_nan=a.dtype.is_floating_point))


@pytest.mark.parametrize("dt", ALL_DTYPES, ids=lambda d: d.name)
def test_every_dtype_round_trips(dt):
    rng = np.random.default_rng(0)
    values = rng.normal(size=(3, 4)) * 50
    x = dynjit.from_numpy(values.astype(dt.np) if dt.name != "bool" else values > 0)
    for t in (x, x[1], x.t(), x[:, ::2], x[2, 3], dynjit.zeros(0, 3, dtype=dt)):
        y = roundtrip(t)
        assert same(y, t) and y.stride() == t.stride()


def test_special_floats_and_requires_grad():
    x = dynjit.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 1e-45])
    y = roundtrip(x)
    assert same(y, x) and np.signbit(y.numpy()[3])
    w = dynjit.randn(3, requires_grad=True)
    y = roundtrip(w)
    assert y.requires_grad and y.is_leaf and same(y, w)
    assert roundtrip(dynjit.tensor(3.5)).shape == ()


def test_views_of_one_storage_load_sharing_memory():
    base = dynjit.arange(12.0).reshape(3, 4)
    row, col, tr = base[1], base[:, 2], base.t()
    out = roundtrip({"base": base, "row": row, "col": col, "tr": tr})
    assert all(same(out[k], v) for k, v in [("base", base), ("row", row), ("col", col), ("tr", tr)])
    assert out["col"].stride() == (4,) and out["tr"].stride() == (1, 4)
    out["base"][1, 2] = 100.0          # one write shows through every view, as in torch
    assert out["row"][2].item() == 100.0 and out["col"][1].item() == 100.0 and out["tr"][2, 1].item() == 100.0
    buf = io.BytesIO()
    dynjit.save([base, row, col, tr], buf)
    names = zipfile.ZipFile(io.BytesIO(buf.getvalue())).namelist()
    assert [n for n in names if n.startswith("storages/")] == ["storages/0.npy"]     # saved once


def test_a_view_alone_saves_its_whole_storage_as_torch_does():
    base = dynjit.arange(10.0)
    buf = io.BytesIO()
    dynjit.save(base[2:4], buf)
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(buf.getvalue())).read("dynjit_checkpoint.json"))
    assert manifest["storages"][0]["numel"] == 10 and manifest["tensors"][0]["storage_offset"] == 2
    buf.seek(0)
    assert dynjit.load(buf).tolist() == [2.0, 3.0]


def test_same_object_twice_loads_as_one_object():
    w = dynjit.randn(2, 2)
    out = roundtrip({"a": w, "b": w, "c": [w]})
    assert out["a"] is out["b"] is out["c"][0]


def test_nested_containers():
    obj = {"ints": [1, -2, 10 ** 20], "floats": (0.5, float("inf"), float("nan")), "none": None,
           "s": "héllo", "flag": True, 3: "int key", (1, 2): "tuple key", "bytes": b"\x00\xff",
           "nested": [{"t": dynjit.ones(2)}, ((dynjit.zeros(1, dtype=dynjit.int64),),)],
           "od": collections.OrderedDict([("z", 1), ("a", 2)]), "dtype": dynjit.float16,
           "device": dynjit.device("cpu"), "size": dynjit.Size([2, 3]), "empty": {}}
    out = roundtrip(obj)
    assert out["ints"] == [1, -2, 10 ** 20] and type(out["ints"][2]) is int
    assert out["floats"][:2] == (0.5, float("inf")) and np.isnan(out["floats"][2])
    assert type(out["floats"]) is tuple and out["none"] is None and out["s"] == "héllo"
    assert out["flag"] is True and out[3] == "int key" and out[(1, 2)] == "tuple key"
    assert out["bytes"] == b"\x00\xff" and out["empty"] == {}
    assert same(out["nested"][0]["t"], obj["nested"][0]["t"])
    assert same(out["nested"][1][0][0], obj["nested"][1][0][0])
    assert type(out["od"]) is collections.OrderedDict and list(out["od"]) == ["z", "a"]
    assert out["dtype"] is dynjit.float16 and out["device"] == dynjit.device("cpu")
    assert type(out["size"]) is dynjit.Size and out["size"] == (2, 3)
    assert list(out) == list(obj)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 8), nn.Linear(8, 1)
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x):
        return self.fc2(self.bn(self.fc1(x)).relu())


def test_state_dict_round_trip_into_a_fresh_model(tmp_path):
    dynjit.manual_seed(1)
    net = Net()
    net(dynjit.randn(16, 4))            # updates BatchNorm's running stats and num_batches_tracked
    sd = net.state_dict()
    path = tmp_path / "model.pt"
    dynjit.save(sd, path)
    loaded = dynjit.load(path)
    assert type(loaded) is collections.OrderedDict and list(loaded) == list(sd)
    assert all(same(loaded[k], v) for k, v in sd.items())
    fresh = Net()
    fresh.load_state_dict(loaded)
    net.eval(), fresh.eval()
    x = dynjit.randn(5, 4)
    assert dynjit.equal(fresh(x), net(x))


def _train(model, opt, xs, ys):
    losses = []
    for x, y in zip(xs, ys):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("make_opt", [lambda p: dynjit.optim.Adam(p, lr=0.01),
                                      lambda p: dynjit.optim.SGD(p, lr=0.05, momentum=0.9)],
                         ids=["adam", "sgd_momentum"])
def test_optimizer_state_round_trip_resumes_exactly(make_opt):
    dynjit.manual_seed(2)
    xs, ys = [dynjit.randn(8, 3) for _ in range(6)], [dynjit.randn(8, 1) for _ in range(6)]
    model = nn.Linear(3, 1)
    init = {k: v.clone() for k, v in model.state_dict().items()}
    opt = make_opt(model.parameters())
    reference = _train(model, opt, xs, ys)

    model = nn.Linear(3, 1)
    model.load_state_dict(init)
    opt = make_opt(model.parameters())
    first = _train(model, opt, xs[:3], ys[:3])
    ckpt = roundtrip({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 3})
    model2 = nn.Linear(3, 1)
    model2.load_state_dict(ckpt["model"])
    opt2 = make_opt(model2.parameters())
    opt2.load_state_dict(ckpt["optimizer"])
    rest = _train(model2, opt2, xs[3:], ys[3:])
    assert ckpt["step"] == 3 and first + rest == reference


def test_paths_pathlikes_and_file_objects(tmp_path):
    x = dynjit.randn(3)
    dynjit.save(x, str(tmp_path / "a.pt"))
    dynjit.save(x, tmp_path / "b.pt")
    with open(tmp_path / "c.pt", "wb") as fh:
        dynjit.save(x, fh)
    assert same(dynjit.load(str(tmp_path / "a.pt")), x)
    assert same(dynjit.load(pathlib.Path(tmp_path / "b.pt")), x)
    with open(tmp_path / "c.pt", "rb") as fh:
        assert same(dynjit.load(fh), x)
    with pytest.raises(TypeError, match="f must be a path or a writable binary file object"):
        dynjit.save(x, 3)
    with open(tmp_path / "c.pt", "r", encoding="latin-1") as fh:
        with pytest.raises(TypeError, match="opened in binary mode"):
            dynjit.load(fh)


def test_saving_is_deterministic():
    obj = {"w": dynjit.arange(6.0).reshape(2, 3), "n": 1}
    a, b = io.BytesIO(), io.BytesIO()
    dynjit.save(obj, a)
    dynjit.save(obj, b)
    assert a.getvalue() == b.getvalue()


def test_the_documented_format(tmp_path):
    w = dynjit.arange(6.0).reshape(2, 3)
    dynjit.save({"w": w, "wt": w.t(), "lr": 0.1}, tmp_path / "f.pt")
    with zipfile.ZipFile(tmp_path / "f.pt") as zf:
        assert zf.namelist() == ["dynjit_checkpoint.json", "storages/0.npy"]
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())
        manifest = json.loads(zf.read("dynjit_checkpoint.json"))
        flat = np.load(io.BytesIO(zf.read("storages/0.npy")), allow_pickle=False)
    assert manifest["format"] == "dynjit-checkpoint" and manifest["version"] == 1
    assert manifest["root"] == {"dict": [["w", {"tensor": 0}], ["wt", {"tensor": 1}], ["lr", 0.1]]}
    assert manifest["tensors"][1] == {"dtype": "float32", "shape": [3, 2], "stride": [1, 3], "storage": 0,
                                      "storage_offset": 0, "requires_grad": False}
    assert manifest["storages"] == [{"file": "storages/0.npy", "dtype": "float32", "numel": 6}]
    assert manifest["pickles"] == []
    assert flat.tolist() == [0, 1, 2, 3, 4, 5]


class Custom:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, Custom) and other.v == self.v


def test_weights_only_rejects_pickled_objects_by_default():
    buf = io.BytesIO()
    dynjit.save({"w": dynjit.ones(2), "obj": Custom(3)}, buf)
    with pytest.raises(pickle.UnpicklingError,
                       match=r"weights_only=True \(the default\) refused an object of type "
                             r"tests.test_serialization.Custom|weights_only=True \(the default\) refused "
                             r"an object of type test_serialization.Custom"):
        dynjit.load(io.BytesIO(buf.getvalue()))
    out = dynjit.load(io.BytesIO(buf.getvalue()), weights_only=False)
    assert out["obj"] == Custom(3) and same(out["w"], dynjit.ones(2))
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        assert "pickles/0.pkl" in zf.namelist()


def test_a_whole_module_needs_weights_only_false():
    dynjit.manual_seed(3)
    net = Net().eval()
    buf = io.BytesIO()
    dynjit.save(net, buf)
    with pytest.raises(pickle.UnpicklingError, match="If you trust the file, pass weights_only=False"):
        dynjit.load(io.BytesIO(buf.getvalue()))
    loaded = dynjit.load(io.BytesIO(buf.getvalue()), weights_only=False)
    x = dynjit.randn(2, 4)
    assert dynjit.equal(loaded(x), net(x))


def test_unpicklable_object_is_a_clear_save_error():
    with pytest.raises(TypeError, match="dynjit.save cannot save an object of type builtins.function"):
        dynjit.save({"f": lambda: 0}, io.BytesIO())


def test_map_location_forms():
    x = dynjit.randn(2, 3)
    for loc in (None, "cpu", "cpu:0", dynjit.device("cpu"), {"cuda:0": "cpu"}, {"cpu": "cpu"},
                lambda storage, location: storage):
        assert same(roundtrip(x, map_location=loc), x)
    seen = []
    assert same(roundtrip(x, map_location=lambda s, loc: seen.append(loc)), x) and seen == ["cpu"]
    with pytest.raises(RuntimeError, match="dynjit runs on the CPU only; device 'cuda' is not available"):
        roundtrip(x, map_location="cuda")
    with pytest.raises(RuntimeError, match="device 'cuda:1' is not available"):
        roundtrip(x, map_location={"cpu": "cuda:1"})
    with pytest.raises(TypeError, match="map_location must be None, a string, a device, a dict or a callable"):
        roundtrip(x, map_location=3)


# -- errors on files that are not (good) checkpoints ------------------------------------------

def _good_bytes():
    buf = io.BytesIO()
    dynjit.save({"w": dynjit.arange(64.0), "lr": 0.1}, buf)
    return buf.getvalue()


def _load_bytes(data):
    return dynjit.load(io.BytesIO(data))


@pytest.mark.parametrize("cut", [10, 100, 0.5, 0.9, -1])
def test_truncated_file(cut):
    data = _good_bytes()
    n = int(len(data) * cut) if isinstance(cut, float) else cut if cut > 0 else len(data) + cut
    with pytest.raises(CheckpointError, match="is a corrupt or truncated checkpoint"):
        _load_bytes(data[:n])


def test_corrupt_storage_bytes():
    data = bytearray(_good_bytes())
    at = data.index(b"storages/0.npy") + 200         # inside the array's data
    data[at] ^= 0xFF
    with pytest.raises(CheckpointError, match=r"corrupt or truncated checkpoint: 'storages/0.npy' cannot be read "
                                              r"\(BadZipFile: Bad CRC-32"):
        _load_bytes(bytes(data))


def _rezip(files):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in files.items():
            zf.writestr(name, content)
    return buf.getvalue()


def _files():
    with zipfile.ZipFile(io.BytesIO(_good_bytes())) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_malformed_manifests():
    files = _files()
    manifest = json.loads(files["dynjit_checkpoint.json"])
    bad = dict(files, **{"dynjit_checkpoint.json": b"{not json"})
    with pytest.raises(CheckpointError, match="dynjit_checkpoint.json is not valid JSON"):
        _load_bytes(_rezip(bad))
    m = dict(manifest, tensors=[dict(manifest["tensors"][0], shape=[65])])
    with pytest.raises(CheckpointError, match="tensor 0 reaches outside its storage"):
        _load_bytes(_rezip(dict(files, **{"dynjit_checkpoint.json": json.dumps(m)})))
    m = dict(manifest, root={"mystery": 1})
    with pytest.raises(CheckpointError, match="unknown manifest tag 'mystery'"):
        _load_bytes(_rezip(dict(files, **{"dynjit_checkpoint.json": json.dumps(m)})))
    m = dict(manifest)
    del m["tensors"]
    with pytest.raises(CheckpointError, match="malformed manifest \\(KeyError"):
        _load_bytes(_rezip(dict(files, **{"dynjit_checkpoint.json": json.dumps(m)})))
    missing = {k: v for k, v in files.items() if k != "storages/0.npy"}
    with pytest.raises(CheckpointError, match="names 'storages/0.npy', which the archive lacks"):
        _load_bytes(_rezip(missing))
    wrong = dict(files, **{"storages/0.npy": b"not an npy file"})
    with pytest.raises(CheckpointError, match="'storages/0.npy' is not a valid .npy array"):
        _load_bytes(_rezip(wrong))
    m = dict(manifest, version=99)
    with pytest.raises(CheckpointError, match="format version 99; this dynjit reads version 1"):
        _load_bytes(_rezip(dict(files, **{"dynjit_checkpoint.json": json.dumps(m)})))


def test_files_that_are_not_dynjit_checkpoints(tmp_path):
    with pytest.raises(CheckpointError, match="is not a dynjit checkpoint \\(it is empty\\)"):
        _load_bytes(b"")
    with pytest.raises(CheckpointError, match="looks like a pickle file"):
        _load_bytes(pickle.dumps({"a": 1}, protocol=2))
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(CheckpointError, match=r"'.*notes.txt' is not a dynjit checkpoint; dynjit.save writes a zip"):
        dynjit.load(tmp_path / "notes.txt")
    with pytest.raises(CheckpointError, match="is a zip archive but not a dynjit checkpoint"):
        _load_bytes(_rezip({"readme.txt": b"x"}))
    with pytest.raises(CheckpointError, match="looks like a PyTorch checkpoint"):
        _load_bytes(_rezip({"archive/data.pkl": b"\x80\x02}q\x00.", "archive/version": b"3"}))
    with pytest.raises(CheckpointError, match="does not say format 'dynjit-checkpoint'"):
        _load_bytes(_rezip({"dynjit_checkpoint.json": b'{"format": "other"}'}))
    with pytest.raises(FileNotFoundError):
        dynjit.load(tmp_path / "missing.pt")


def test_a_big_endian_storage_loads_in_native_order():
    files = _files()
    flat = np.load(io.BytesIO(files["storages/0.npy"]))
    buf = io.BytesIO()
    np.save(buf, flat.astype(flat.dtype.newbyteorder(">" if np.little_endian else "<")))
    out = _load_bytes(_rezip(dict(files, **{"storages/0.npy": buf.getvalue()})))
    assert out["w"].tolist() == list(range(64)) and out["w"].dtype is dynjit.float32
