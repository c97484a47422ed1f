"""The one text form of a spatial unrolling (`SpatialMapping.to_json` / `from_json`): what a spatial
candidate's work unit carries, what the ``spatial`` column of a row and ``sweep map --json`` hold.
The array dims keep their order because `SpatialMapping.fit` clips in that order: a round trip
through the text must fit every layer as the unrolling itself does."""

import pytest

from costmodel.loopnest.mapping import MappingError, SpatialMapping
from costmodel.workload import Layer


def test_the_text_is_compact_json_in_the_unrollings_order():
    sp = SpatialMapping({"D1": (("OX", 14),), "D2": (("FY", 3), ("K", 4))})
    assert sp.to_json() == '{"D1":[["OX",14]],"D2":[["FY",3],["K",4]]}'
    assert SpatialMapping.from_json(sp.to_json()) == sp


def test_the_order_of_array_dims_survives_the_text():
    """K 10 over two array dims of 4: the first dim clipped takes 4 and the second ceil(10 / 4) = 3;
    read back from its text, the unrolling clips the same dims to the same factors (a text sorted
    by name would put "A" before "B" and give A 3, B 4 instead)."""
    layer = Layer("k10", K=10, C=1)
    sp = SpatialMapping({"B": (("K", 4),), "A": (("K", 4),)})
    assert sp.fit(layer).dims == {"B": (("K", 4),), "A": (("K", 3),)}
    back = SpatialMapping.from_json(sp.to_json())
    assert list(back.dims) == ["B", "A"]
    assert back.fit(layer).dims == sp.fit(layer).dims


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '{"D1": 3}'])
def test_bad_text_is_a_mapping_error(text):
    with pytest.raises(MappingError):
        SpatialMapping.from_json(text)
