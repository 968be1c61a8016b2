"""The pool by hand: processor sharing, prefill first, iteration base, seats, routing."""

from __future__ import annotations

from heapq import heappop, heappush

import pytest
from tests.simulate.engine.oracle.pool import Pool

from sandbox_fleet.simulate.engine.inference import Inference
from sandbox_fleet.simulate.engine.inference.routing import fewest


def drive(cfg: Inference, calls: list[tuple[float, int, int, int, int]]) -> tuple[dict, Pool]:
    """A minimal event loop: ``calls`` = (time, rollout, ctx, new, dec); returns finish times."""
    heap, seq, finish = [], [0], {}

    def schedule(t, payload):
        heappush(heap, (t, seq[0], "pool", payload))
        seq[0] += 1

    pool = Pool(cfg, 10, schedule, finish.__setitem__)
    for t, r, ctx, new, dec in calls:
        heappush(heap, (t, seq[0], "call", (r, ctx, new, dec)))
        seq[0] += 1
    while heap:
        t, _, kind, x = heappop(heap)
        if kind == "call":
            pool.submit(t, x[0], x[1], x[2], x[3], True)
        else:
            pool.event(t, x)
    return finish, pool


def test_processor_sharing_by_hand():
    # A: 1,000 tokens at t=0; B: 1,000 tokens at t=0.5; 1,000 tok/s shared.
    # 0-0.5: A alone (0.5 s of work left); then halves: A ends at 1.5, B alone to 2.0.
    fin, pool = drive(Inference(replicas=1, prefill_tok_s=1e9, decode_tok_s=1000), [(0, 0, 0, 0, 1000), (0.5, 1, 0, 0, 1000)])
    assert fin[0] == pytest.approx(1.5) and fin[1] == pytest.approx(2.0)
    assert sum(pool.sojourn_s) == pytest.approx(1.5 + 1.5)
    rep = pool.reps[0]
    assert rep.area_busy == pytest.approx(2.0) and rep.area_n == pytest.approx(0.5 + 2 * 1.0 + 0.5)


def test_a_prompt_is_prefilled_first_and_stalls_decoding():
    # A decodes 1,000 tokens from t=0; B arrives at 0.5 with a 400-token prompt at 1,000 tok/s:
    # decoding stalls 0.5-0.9 while B prefills (B's first token at 0.9), then both share.
    # A has 0.5 s of work left, B 0.1 s: B ends at 0.9 + 0.2 = 1.1; A alone 0.4 s more: 1.5.
    fin, pool = drive(Inference(replicas=1, prefill_tok_s=1000, decode_tok_s=1000), [(0, 0, 0, 0, 1000), (0.5, 1, 0, 400, 100)])
    assert list(pool.ttft_s) == pytest.approx([0.0, 0.4])
    assert fin[1] == pytest.approx(1.1) and fin[0] == pytest.approx(1.5)


def test_iteration_base_slows_a_lone_call():
    # Alone: one token per (base + 1 / decode_tok_s) = 10 ms + 1 ms: 100 tokens in 1.1 s.
    fin, _ = drive(Inference(replicas=1, prefill_tok_s=1e9, decode_tok_s=1000, iteration_base_s=0.01), [(0, 0, 0, 0, 100)])
    assert fin[0] == pytest.approx(1.1)


def test_a_seat_limit_queues_in_arrival_order():
    fin, pool = drive(Inference(replicas=1, prefill_tok_s=1e9, decode_tok_s=1000, max_num_seqs=1),
                      [(0, 0, 0, 0, 1000), (0.25, 1, 0, 0, 500)])
    assert fin[0] == pytest.approx(1.0) and fin[1] == pytest.approx(1.5)
    assert list(pool.wait_s) == pytest.approx([0.0, 0.75])


def test_sticky_routing_spreads_new_rollouts_and_least_loaded_follows_load():
    assert fewest([2, 1, 1]) == 1 and fewest([0, 0]) == 0
    cfg = Inference(replicas=2, prefill_tok_s=1e9, decode_tok_s=1000)
    _, pool = drive(cfg, [(0, 0, 0, 0, 10), (0, 1, 0, 0, 10), (0, 2, 0, 0, 10)])
    assert pool.assign == {0: 0, 1: 1, 2: 0}
    cfg = Inference(replicas=2, prefill_tok_s=1e9, decode_tok_s=1000, routing="least-loaded")
    _, pool = drive(cfg, [(0, 0, 0, 0, 1000), (0.1, 0, 0, 0, 10)])
    assert pool.assign == {} and pool.reps[1].area_busy > 0  # the second call avoided the busy replica
