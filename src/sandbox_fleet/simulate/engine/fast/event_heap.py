"""The kernels' event heap: one binary min-heap over arrays, ordered by (time, push sequence); and the
one tail link of a first-come-first-served list kept through a "next" column.

The admission kernel keeps its pending events here (``_inference_rules`` pushes a replica's too):
``ht[i]`` the event's time, ``hi[i] = (seq, kind, x, v)``, and in the kernel's int scalars ``si[0]`` the
next push sequence and ``si[1]`` the heap's size (the kernel's ``SEQ, HN`` are its first two scalars).
Ties in time go to the earlier push, which is what makes a run's order reproducible. The sift
(``up``, ``down``) is written once for any heap of (time, seq) keys with an int row per entry whose
column 0 is the seq: the event heap, and each replica's decode heap (``_inference_rules.dpush``,
``dremove``, on the replica's row of ``dv`` / ``dq``).

Plain Python with no numba import: a kernel registers these with ``_jit.jitable`` (inlined where it
is compiled) and its plain-Python twin calls them as they are.
"""

from __future__ import annotations

SEQ, HN = 0, 1  # the kernels' si[0] and si[1]


def less(t1, s1, t2, s2):
    """(t1, s1) before (t2, s2)."""
    return t1 < t2 or (t1 == t2 and s1 < s2)


def move(ht, hi, dst, src):
    """Entry ``src`` to position ``dst``: its int row of 2 columns (a decode heap's) or 4 (the event
    heap's), written out (a loop over the columns measured slower in the compiled kernel)."""
    ht[dst] = ht[src]
    hi[dst, 0] = hi[src, 0]
    hi[dst, 1] = hi[src, 1]
    if hi.shape[1] == 4:
        hi[dst, 2] = hi[src, 2]
        hi[dst, 3] = hi[src, 3]


def up(ht, hi, n, t, seq):
    """Sift a hole at position ``n`` up for key ``(t, seq)``: the parents after it move down; the
    position the key goes to."""
    while n > 0:
        parent = (n - 1) >> 1
        if less(t, seq, ht[parent], hi[parent, 0]):
            move(ht, hi, n, parent)
            n = parent
        else:
            break
    return n


def down(ht, hi, pos, n, t, seq):
    """Sift a hole at ``pos`` of a heap of ``n`` entries down for key ``(t, seq)``: the smaller
    children before it move up; the position the key goes to."""
    while True:
        c = 2 * pos + 1
        if c >= n:
            break
        if c + 1 < n and less(ht[c + 1], hi[c + 1, 0], ht[c], hi[c, 0]):
            c += 1
        if less(ht[c], hi[c, 0], t, seq):
            move(ht, hi, pos, c)
            pos = c
        else:
            break
    return pos


def push(ht, hi, si, t, kind, x, v):
    """Add event (t, kind, x, v), stamped with the next sequence number."""
    n = si[HN]
    seq = si[SEQ]
    si[SEQ] = seq + 1
    si[HN] = n + 1
    n = up(ht, hi, n, t, seq)
    ht[n] = t
    hi[n, 0] = seq
    hi[n, 1] = kind
    hi[n, 2] = x
    hi[n, 3] = v


def pop(ht, hi, si):
    """Remove the head (read ``ht[0]``, ``hi[0]`` before calling)."""
    n = si[HN] - 1
    si[HN] = n
    if n == 0:
        return
    t = ht[n]
    s0, s1, s2, s3 = hi[n, 0], hi[n, 1], hi[n, 2], hi[n, 3]
    pos = down(ht, hi, 0, n, t, s0)  # the last entry sifted down from the root
    ht[pos] = t
    hi[pos, 0] = s0
    hi[pos, 1] = s1
    hi[pos, 2] = s2
    hi[pos, 3] = s3


# --- a first-come-first-served list linked through a "next" column ------------------------------
def link_tail(heads, row, c_head, c_tail, nxt, c_next, r):
    """Append ``r`` to the list whose head and tail are ``heads[row, c_head]``, ``heads[row, c_tail]``
    (-1: empty), linked through ``nxt[., c_next]`` (-1: the last): a pool workload's queue
    (``_admit_kernel.enqueue``), a replica's seat and prefill lines (``_inference_rules``), a pool's
    attempts ended early (``_admit_kernel.mark_ended_early``); ``link_pop`` takes the head."""
    nxt[r, c_next] = -1
    t = heads[row, c_tail]
    if t >= 0:
        nxt[t, c_next] = r
    else:
        heads[row, c_head] = r
    heads[row, c_tail] = r


def link_pop(heads, row, c_head, c_tail, nxt, c_next):
    """Take that list's head off it (the list holds one) and return it."""
    r = heads[row, c_head]
    q = nxt[r, c_next]
    heads[row, c_head] = q
    if q < 0:
        heads[row, c_tail] = -1
    return r


def link_remove(heads, row, c_head, c_tail, nxt, c_next, r):
    """Take ``r`` (a member) out of that list, wherever it is (a walk from the head: rare)."""
    prev = -1
    q = heads[row, c_head]
    while q != r:
        prev = q
        q = nxt[q, c_next]
    q = nxt[r, c_next]
    if prev >= 0:
        nxt[prev, c_next] = q
    else:
        heads[row, c_head] = q
    if q < 0:
        heads[row, c_tail] = prev
