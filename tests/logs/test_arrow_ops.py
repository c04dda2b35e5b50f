"""Arrow work of a batch: the prefilter read once per distinct value where values repeat by design."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from flywheel.logs.arrow_ops import KEY_PREFILTER, PREFILTER, _key_hits, _prefilter


def test_per_distinct_prefilter_flags_exactly_what_the_regex_flags():
    vals = ['{"answer": "4"}', None, '{"note": "mail bob@example.com"}', '{"x": 1}', '{"k": "sk-' + "a" * 24 + '"}']
    col = pa.chunked_array([pa.array(vals * 300), pa.array(vals[::-1] * 300)])
    direct = pc.fill_null(pc.match_substring_regex(col, PREFILTER["reference"]), False)
    got = pc.fill_null(_prefilter(col, "reference"), False)
    assert pc.all(pc.equal(got, direct)).as_py() and pc.sum(pc.cast(got, pa.int64())).as_py() == 1200
    unique = pa.array([f'{{"answer": "{i}"}}' for i in range(2000)])  # mostly distinct: read directly
    assert not pc.any(_prefilter(unique, "reference")).as_py()


def test_key_prefilter_per_distinct_value():
    """Per distinct value for `task_id`-like columns, straight over the column for `id` (distinct by design):
    the same flags either way."""
    task = pa.chunked_array([pa.array(["t1", "t2", "bob@example.com", None] * 2000)])
    direct = pc.fill_null(pc.match_substring_regex(task, KEY_PREFILTER), False).to_numpy(zero_copy_only=False)
    for column in ("task_id", "id"):
        got = pc.fill_null(_key_hits(task, column), False)
        got = (got.combine_chunks() if isinstance(got, pa.ChunkedArray) else got).to_numpy(zero_copy_only=False)
        assert np.array_equal(got, direct) and got.sum() == 2000, column
