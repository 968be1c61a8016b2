"""Exception health per node: the exception rate of the rollouts each host or Kubernetes node ran.

A node with a failing disk, a broken container runtime or a stale image cache raises on the
rollouts it hosts whatever task or model they are, and the fleet-wide rate spreads that over
every node. So the rate is also taken per ``node``, with the same counts as per task
(:func:`tasks_health.exception_counts`); whether a node's count is more than chance at the
fleet's rate is judged by ``check`` (``exception_rate_by_node``), which has the thresholds.

Every node is listed (a fleet has hundreds or thousands, not a task corpus's tens of
thousands), by node name, so the output does not depend on row order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sandbox_fleet.measure.stats import exception_rate
from sandbox_fleet.measure.tasks_health import exception_counts

#: The rollout columns this measurement reads.
COLUMNS = ("node", "has_exception")


def measure_node_health(table: pa.Table) -> dict | None:
    """Per-node exception counts over a canonical rollout table; None when no row names a node."""
    node = table.column("node")
    if node.null_count == len(node):  # what every reader gives: no codes built (80 MB at 10M rows)
        return None
    _, ids, n, flagged, exc = exception_counts(node, table.column("has_exception"))
    if len(ids) == 0:
        return None
    names = ids.to_pylist()
    per_node = [
        {
            "node": names[i],
            "rows": int(n[i]),
            "exceptions": int(exc[i]),
            "exception_rate": exception_rate(int(exc[i]), int(flagged[i])),
            "exception_rate_rows": int(flagged[i]),
        }
        for i in sorted(range(len(names)), key=names.__getitem__)
    ]
    unnamed = np.arange(n.size) >= len(ids)
    return {
        "rows": table.num_rows,
        "nodes": len(names),
        "rows_without_node": int(n[unnamed].sum()),
        "exceptions_without_node": int(exc[unnamed].sum()),
        "exceptions": int(exc.sum()),
        "per_node": per_node,
    }
