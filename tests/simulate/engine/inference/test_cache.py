"""Prefix cache: LRU by bytes, host tier, hits in either tier."""

from tests.simulate.engine.oracle.cache import PrefixCache


def test_lru_by_bytes_evicts_the_least_recently_used():
    c = PrefixCache(100.0)
    c.put(1, 40)
    c.put(2, 40)
    assert c.take(1)  # 1 in service: out of the cache
    c.put(1, 50)  # back, grown: 2 (40) + 1 (50) = 90 fits
    c.put(3, 30)  # 120 > 100: evict LRU = 2
    assert 2 not in c and 1 in c and 3 in c
    assert c.evicted_bytes == 40 and c.gpu_used == 80


def test_host_tier_keeps_evicted_prefixes_and_they_still_hit():
    c = PrefixCache(50.0, host_bytes=60.0)
    c.put(1, 40)
    c.put(2, 40)  # 1 -> host
    c.put(3, 40)  # 2 -> host (80 > 60: 1 dropped)
    assert 1 not in c and 2 in c and 3 in c
    assert c.take(2) and not c.take(1)
    assert c.evicted_bytes == 80


def test_zero_cache_stores_nothing_and_unlimited_everything():
    off, on = PrefixCache(0.0), PrefixCache(None)
    for k in range(100):
        off.put(k, 1e9)
        on.put(k, 1e9)
    assert not any(k in off for k in range(100)) and all(k in on for k in range(100))
    assert off.evicted_bytes == on.evicted_bytes == 0
