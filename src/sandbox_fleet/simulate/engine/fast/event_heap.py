"""The kernels' event heap: one binary min-heap over arrays, ordered by (time, push sequence).

The admission kernel keeps its pending events here (``_inference_rules`` pushes a replica's too):
``ht[i]`` the event's time, ``hi[i] = (seq, kind, x, v)``, and in the kernel's int scalars ``si[0]`` the
next push sequence and ``si[1]`` the heap's size (the kernel's ``SEQ, HN`` are its first two scalars).
Ties in time go to the earlier push, which is what makes a run's order reproducible.

Plain Python with no numba import: a kernel registers these with ``_jit.jitable`` (inlined where it
is compiled) and its plain-Python twin calls them as they are.
"""

from __future__ import annotations

SEQ, HN = 0, 1  # the kernels' si[0] and si[1]


def less(t1, s1, t2, s2):
    """(t1, s1) before (t2, s2)."""
    return t1 < t2 or (t1 == t2 and s1 < s2)


def push(ht, hi, si, t, kind, x, v):
    """Add event (t, kind, x, v), stamped with the next sequence number."""
    n = si[HN]
    seq = si[SEQ]
    si[SEQ] = seq + 1
    si[HN] = n + 1
    while n > 0:  # sift up
        parent = (n - 1) >> 1
        if less(t, seq, ht[parent], hi[parent, 0]):
            ht[n] = ht[parent]
            hi[n, 0] = hi[parent, 0]
            hi[n, 1] = hi[parent, 1]
            hi[n, 2] = hi[parent, 2]
            hi[n, 3] = hi[parent, 3]
            n = parent
        else:
            break
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
    pos = 0
    while True:  # sift the last entry down from the root
        c = 2 * pos + 1
        if c >= n:
            break
        if c + 1 < n and less(ht[c + 1], hi[c + 1, 0], ht[c], hi[c, 0]):
            c += 1
        if less(ht[c], hi[c, 0], t, s0):
            ht[pos] = ht[c]
            hi[pos, 0] = hi[c, 0]
            hi[pos, 1] = hi[c, 1]
            hi[pos, 2] = hi[c, 2]
            hi[pos, 3] = hi[c, 3]
            pos = c
        else:
            break
    ht[pos] = t
    hi[pos, 0] = s0
    hi[pos, 1] = s1
    hi[pos, 2] = s2
    hi[pos, 3] = s3
