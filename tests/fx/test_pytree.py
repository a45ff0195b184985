"""dynjit._pytree: the one flatten/unflatten that func, fx (make_fx) and aot use."""
import collections

import pytest

import dynjit
from dynjit import _pytree as pytree
from dynjit.aot.flat import call_key
from dynjit.fx import make_fx

Point = collections.namedtuple("Point", "x y")


class Size(tuple):
    pass


class Box:
    def __init__(self, items, label):
        self.items, self.label = items, label


@pytest.fixture
def box_node():
    pytree.register_pytree_node(Box, lambda b: (b.items, b.label), lambda items, label: Box(items, label))
    yield
    del pytree._NODES[Box]


TREES = [
    1, None, (), [], {},
    (1, [2, 3], {"a": 4, "b": (5,)}),
    [Point(1, [2]), {"k": Point(3, 4)}],
    {"z": 1, "a": 2},          # key order is kept
    ((), [[]], {"e": {}}),
]


@pytest.mark.parametrize("tree", TREES)
def test_round_trip(tree):
    leaves, spec = pytree.tree_flatten(tree)
    assert pytree.tree_unflatten(spec, leaves) == tree
    assert pytree.tree_leaves(tree) == leaves
    assert pytree.tree_structure(tree) == spec
    hash(spec)


def test_leaves_in_order_and_spec_format():
    leaves, spec = pytree.tree_flatten((1, [2, Point(3, 4)], {"b": 5, "a": 6}))
    assert leaves == [1, 2, 3, 4, 5, 6]
    assert spec == (tuple, None, (None, (list, None, (None, (Point, None, (None, None)))),
                                  (dict, ("b", "a"), (None, None))))
    assert pytree.tree_flatten(7) == ([7], None)


def test_subclasses_come_back_as_their_base_but_namedtuples_as_themselves():
    out = pytree.tree_unflatten(*reversed(pytree.tree_flatten((Size((1, 2)), Point(1, 2)))))
    assert type(out[0]) is tuple and type(out[1]) is Point
    od = collections.OrderedDict(a=1)
    assert type(pytree.tree_map(lambda x: x, od)) is dict


def test_registered_node_types(box_node):
    tree = [Box([1, (2, 3)], "lbl"), 4]
    leaves, spec = pytree.tree_flatten(tree)
    assert leaves == [1, 2, 3, 4]
    out = pytree.tree_unflatten(spec, [10, 20, 30, 40])
    assert out[0].label == "lbl" and out[0].items == [10, (20, 30)] and out[1] == 40
    with pytest.raises(ValueError, match="already a pytree node"):
        pytree.register_pytree_node(Box, None, None)
    with pytest.raises(ValueError, match="already a pytree node"):
        pytree.register_pytree_node(dict, None, None)


def test_tree_map_and_shared_iterators():
    assert pytree.tree_map(lambda x: x * 10, (1, {"a": [2]})) == (10, {"a": [20]})
    it = iter([1, 2, 3])
    specs = [pytree.tree_structure(t) for t in ((0, 0), [0])]
    assert [pytree.tree_unflatten(s, it) for s in specs] == [(1, 2), [3]]


def test_specs_tell_structures_apart():
    s = pytree.tree_structure
    assert s((1, 2)) != s([1, 2]) != s(Point(1, 2))
    assert s({"a": 1}) != s({"b": 1})
    assert s((1, (2,))) != s(((1,), 2))


def test_the_layers_use_it():
    """make_fx's nested inputs, aot's call key and func's transforms all read the same specs."""
    x = dynjit.ones(2)
    gm = make_fx(lambda d: d["a"] + d["b"][0])({"a": x, "b": [x]})
    assert gm._in_spec == pytree.tree_structure(({"a": x, "b": [x]},))
    assert gm({"a": x, "b": [x * 2]}).tolist() == [3.0, 3.0]
    key, leaves, spec = call_key((x, [x, 1]), {"k": 2})
    assert spec == pytree.tree_structure(((x, [x, 1]), {"k": 2})) and leaves == [x, x, 1, 2]
    out = dynjit.func.vmap(lambda p: Point(p.x * 2, p.y))(Point(dynjit.ones(3, 2), dynjit.zeros(3)))
    assert type(out) is Point and out.x.shape == (3, 2)
