"""The on-disk cache of object code cannot hurt: a cache entry that is empty, truncated,
zeroed, bit-flipped, of another format, or another graph's valid entry stored under this
one's name is discarded with one warning naming the file, the module is compiled again,
and the entry is replaced by a good one. (Before, LLVM crashed with SIGSEGV/SIGABRT on
the first kinds in every later process, and the last one raised on every call.)

Each scenario runs the compiled function in fresh processes sharing a cache directory."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from backends.llvm import jit

_PROGRAM = """
    import json, warnings
    import dynjit
    from dynjit.fx import make_fx
    from backends.llvm import compile_graph, jit
    dynjit.manual_seed(0)
    x = dynjit.randn(64, 33)
    GRAPHS = {
        "a": lambda x: ((x * 3.25).tanh() + x.softmax(1)).sum(0),
        "b": lambda x: (x.exp() - x * 0.5).amax(1),
    }
    gm = make_fx(GRAPHS[%r])(x)
    out = compile_graph(gm, [x])(x)
    ref = gm(x)
    print(json.dumps({"stats": jit.stats, "out": out.numpy().tolist(), "ref": ref.numpy().tolist()}))
"""


def _run(graph, cache_dir):
    env = dict(os.environ, DYNJIT_CACHE_DIR=str(cache_dir), DYNJIT_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(_PROGRAM % graph)], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, f"the process died ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def _entries(cache_dir):
    return sorted(p for p in os.listdir(cache_dir) if p.endswith(jit.CACHE_SUFFIX))


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A cache directory holding graph a's entry, its bytes, and graph b's entry."""
    d = tmp_path_factory.mktemp("cache_a")
    first, _ = _run("a", d)
    assert first["stats"]["compiled"] == 1
    (name,) = _entries(d)
    db = tmp_path_factory.mktemp("cache_b")
    _run("b", db)
    (name_b,) = _entries(db)
    assert name_b != name
    return {"name": name, "bytes": (d / name).read_bytes(), "other": (db / name_b).read_bytes(),
            "result": first["out"]}


def _flip(data, offset, bit=0):
    b = bytearray(data)
    b[offset] ^= 1 << bit
    return bytes(b)


CORRUPTIONS = {
    "empty": lambda g: b"",
    "truncated_in_header": lambda g: g["bytes"][:20],
    "truncated_payload": lambda g: g["bytes"][:len(g["bytes"]) // 2],
    "one_byte_short": lambda g: g["bytes"][:-1],
    "appended_to": lambda g: g["bytes"] + b"\0" * 64,
    "zeroed": lambda g: b"\0" * len(g["bytes"]),
    "zeroed_block_in_payload": lambda g: (g["bytes"][:len(g["bytes"]) // 2] + b"\0" * 4096
                                          + g["bytes"][len(g["bytes"]) // 2 + 4096:]),
    "bit_flipped_in_payload": lambda g: _flip(g["bytes"], len(g["bytes"]) * 2 // 3, 5),
    "bit_flipped_in_header": lambda g: _flip(g["bytes"], 9, 0),
    "bit_flipped_in_key": lambda g: _flip(g["bytes"], 20, 1),
    "raw_object_file": lambda g: g["bytes"][jit._HEAD.size + len(g["name"]) - len(jit.CACHE_SUFFIX)
                                            + jit._LEN.size + jit._DIGEST:],
    "another_graphs_valid_entry": lambda g: g["other"],
    "garbage": lambda g: os.urandom(5000),
}


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_a_bad_entry_is_discarded_recompiled_and_replaced(tmp_path, good, kind):
    path = tmp_path / good["name"]
    path.write_bytes(CORRUPTIONS[kind](good))
    assert path.read_bytes() != good["bytes"]

    out, err = _run("a", tmp_path)
    assert out["out"] == good["result"]
    np.testing.assert_allclose(out["out"], out["ref"], rtol=1e-5, atol=1e-5)
    assert out["stats"]["compiled"] == 1 and out["stats"]["disk_hits"] == 0
    assert out["stats"]["disk_rejected"] == 1
    warned = [line for line in err.splitlines() if "CacheWarning" in line]
    assert len(warned) == 1 and str(path) in warned[0], err

    # repaired: a whole entry for this key, which the next process loads without a word
    key = good["name"][:-len(jit.CACHE_SUFFIX)]
    obj, why = jit.decode_entry(path.read_bytes(), key)
    assert why is None and obj
    again, err = _run("a", tmp_path)
    assert again["stats"]["compiled"] == 0 and again["stats"]["disk_hits"] == 1
    assert again["out"] == good["result"]
    assert "CacheWarning" not in err
    assert _entries(tmp_path) == [good["name"]]          # and no temporary files left behind
    assert sorted(os.listdir(tmp_path)) == [good["name"]]


def test_entry_format_round_trip_and_rejections():
    key = "0123456789abcdef0123456789abcdef"
    obj = bytes(range(256)) * 10
    data = jit.encode_entry(key, obj)
    assert jit.decode_entry(data, key) == (obj, None)
    assert jit.decode_entry(data, "f" * 32)[1].startswith("written for another module")
    for i in range(0, len(data), 97):       # every flipped bit is caught, header or payload
        assert jit.decode_entry(_flip(data, i, i % 8), key)[0] is None
    for n in range(0, len(data), 131):      # every truncation
        assert jit.decode_entry(data[:n], key)[0] is None


def test_a_failed_write_leaves_no_entry_and_no_temporary_file(tmp_path, monkeypatch):
    path = tmp_path / ("k" * 32 + jit.CACHE_SUFFIX)

    def boom(fd):
        raise OSError("disk full")
    monkeypatch.setattr(jit.os, "fsync", boom)
    jit._write_cached(str(path), "k" * 32, b"object code")
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    jit._write_cached(str(path), "k" * 32, b"object code")
    assert os.listdir(tmp_path) == [path.name]
    assert jit.decode_entry(path.read_bytes(), "k" * 32) == (b"object code", None)
