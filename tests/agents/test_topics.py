"""Topic helpers that need no broker."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner
from hypothesis import given
from hypothesis import strategies as st

from stream_guard.agents.topics import key_partition


@given(key=st.binary(min_size=1, max_size=64), partitions=st.integers(min_value=1, max_value=64))
def test_key_partition_is_where_the_default_partitioner_puts_a_keyed_message(key: bytes, partitions: int) -> None:
    everything = list(range(partitions))
    assert key_partition(key, partitions) == DefaultPartitioner()(key, everything, everything)
