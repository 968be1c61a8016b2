"""Event kinds and the clock's ordering rule.

The event list is a binary heap of ``(time, seq, kind, payload)`` tuples. ``seq`` is
a counter incremented per scheduled event, so events at the same time run in the
order they were scheduled, and the payload is never compared: ties are ordered
deterministically. Open-workload arrivals are not pushed on the heap; they come
from one pre-merged sorted stream, and at equal times heap events run first
(a slot freed at ``t`` is free for a rollout arriving at ``t``).
"""

FINISH = 0  # payload: attempt row
SLOT_READY = 1  # payload: slot id (provisioning finished)
BUILD_DONE = 2  # payload: attempt row (frees a start slot)
RELEASE = 3  # payload: workload index (RL: release eligible batches)
TRAIN_DONE = 4  # payload: workload index
PREEMPT = 5  # payload: pool index
NODE_BACK = 6  # payload: (pool, node)
DROP = 7  # payload: (rollout, enqueue epoch): queue timeout
TURN = 8  # payload: attempt row: its current turn's model call is due (inference pool)
POOL = 9  # payload: (replica, version): the replica's earliest call ends (inference pool)
AGENT_CUT = 36  # payload: attempt row: its agent phase's timeout or exception falls now (inference pool)
