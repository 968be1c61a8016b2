"""What a run returns: every attempt placed in time, as NumPy arrays.

One row per attempt, sorted by (workload, index within workload, attempt). With no
retries and no drops there is exactly one row per rollout, in release order, so
row ``k`` of a workload is the rollout that got ``holds[k]``. A retried attempt has
state ``RETRIED``; a rollout dropped from the queue has one row with ``start_s`` NaN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np

from sandbox_fleet.simulate.engine.entities import (
    AGENT,
    BUILD,
    LIFETIME,
    PREEMPTION,
    RETRIED,
    STATE_NAMES,
    TIMEOUT,
    VERIFIER,
    Fleet,
)
from sandbox_fleet.simulate.engine.workloads import Workload

if TYPE_CHECKING:  # Arrow is loaded only when a run is turned into telemetry
    import pyarrow as pa

    from sandbox_fleet.simulate.engine.images import ImageRun
    from sandbox_fleet.simulate.engine.inference.figures import ServedRun
    from sandbox_fleet.simulate.engine.trainer import TrainerSteps
    from sandbox_fleet.simulate.model import SimulateSummary

DEFAULT_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
EXCEPTION_TYPES = {BUILD: "BuildError", AGENT: "AgentError", VERIFIER: "VerifierError", PREEMPTION: "PreemptedError",
                   LIFETIME: "SandboxLifetimeError"}
TIMEOUT_TYPE = "AgentTimeoutError"


@dataclass(frozen=True)
class ExecutorOutput:
    """What the engine returns (``admit_loop.run``, or ``fifo.run_one_pass`` where nothing feeds back; ``run.place``
    dispatches): the placed attempts and the run's counters.

    ``first``: per rollout, its first attempt's columns (``arrival_s``, ``start_s``, ``finish_s``,
    ``state``, ``phase``, ``build_s``, ``agent_s``, ``verify_s``), NumPy arrays of length ``n``.
    ``extra``: the retry attempts, in run order: the same columns plus ``rollout`` and
    ``attempt``, as lists (empty lists when nothing retried). ``rl``: each RL workload's trainer
    steps (``trainer.TrainerSteps``). ``area_busy`` / ``area_wait``: the event loop's integrals of running sandboxes and
    waiting rollouts over time (``None`` on the FIFO path, which has no clock to integrate on).
    ``served``: the inference pool's records, when a pool served the model calls.
    """

    first: dict[str, np.ndarray]
    extra: dict[str, list]
    rl: dict[int, TrainerSteps] = field(default_factory=dict)
    preemptions: int = 0
    area_busy: float | None = None
    area_wait: float | None = None
    clock_monotonic: bool = True
    served: ServedRun | None = None
    #: ``[fleet.limits]`` placed by the admission kernel: per rollout of a limited pool
    #: (its first attempt), ``warm`` (claimed from the warm pool) and ``ready_wait_s`` (slot to sandbox
    #: ready: the bucket, the starting cap, the cold start)
    limits: dict[str, np.ndarray] | None = None
    #: pools made of nodes (``node_fleet.figures``): per node pool, node-hours, $, peaks, provisioning waits
    nodes: list[dict] | None = None
    #: ``[images]`` on pools made of nodes: the cache as the engine placed the builds (``images.NodeImages.run``)
    images: ImageRun | None = None


@dataclass
class SimResult:
    """Per-attempt arrays plus the run's counters. See the module docstring."""

    workloads: list[Workload]
    fleets: list[Fleet]
    workload: np.ndarray  # int64: index into ``workloads``
    index: np.ndarray  # int64: rollout index within its workload (release order)
    rollout: np.ndarray  # int64: global rollout id
    attempt: np.ndarray  # int64: 0 for the first attempt
    arrival_s: np.ndarray  # when this attempt entered the queue
    start_s: np.ndarray  # NaN when it never got a slot (dropped)
    finish_s: np.ndarray
    state: np.ndarray  # int8 codes, see entities.STATE_NAMES
    phase: np.ndarray  # int8 exception phase, see entities.PHASE_NAMES
    build_s: np.ndarray
    agent_s: np.ndarray
    verify_s: np.ndarray
    label: np.ndarray  # int64 mixture component (model) per row, -1 when none
    rollout_arrival_s: np.ndarray  # per rollout: first arrival
    steps: dict[int, dict[str, np.ndarray]]  # RL workloads: release/batch_end/train_start/train_end
    preemptions: int
    area_busy: float | None  # integral of running sandboxes over time, from the event loop (None: fifo path)
    area_wait: float | None  # integral of queued rollouts over time
    end_s: float  # last terminal event or last trainer step, whichever is later
    engine: str = "admission-kernel"  # the path that ran (``run.ONE_PASS``, ``run.KERNEL``); only ``--timing`` shows it
    wall_s: float = 0.0
    clock_monotonic: bool = True
    n_rollouts: int = 0
    inference: ServedRun | None = None  # when an inference pool served the model calls
    images: ImageRun | None = None  # the image cache's pre-pass (``[images]``)
    turns_total: float = 0.0  # turns drawn for the first attempts (a substrate's per-action overhead counts them)
    limits: dict[str, np.ndarray] | None = None  # ``[fleet.limits]``' per-rollout warm flags and ready waits
    nodes: list[dict] | None = None  # pools made of nodes: per node pool (``node_fleet.figures``)
    _sweeps: dict = field(default_factory=dict, repr=False)
    _derived: dict = field(default_factory=lambda: _Derived(), repr=False)  # noqa: PLW0108 (_Derived is defined below)

    @classmethod
    def build(cls, *, workloads, fleets, offsets, r_label, rows, r_arrival, rl, preemptions, area_busy, area_wait, end_s, engine):
        roll = rows["rollout"]
        att = rows["attempt"]
        if roll.size > offsets[-1]:  # retries appended rows: sort them next to their rollout
            order = np.lexsort((att, roll))
            rows = {k: v[order] for k, v in rows.items()}
            roll, att = rows["rollout"], rows["attempt"]
        if offsets.size == 2:  # one workload: every row is workload 0 and its index is its rollout id
            wk = np.zeros(roll.size, dtype=np.int64)  # zeroed lazily by the allocator: no pages touched here
            index = roll  # the same values: shared, not copied (nothing writes into a result's arrays)
        elif roll.size == offsets[-1]:  # one row per rollout, in rollout order
            wk = np.repeat(np.arange(offsets.size - 1, dtype=np.int64), np.diff(offsets))
        else:
            wk = np.searchsorted(offsets, roll, side="right") - 1
        if offsets.size != 2:
            index = roll - offsets[wk]
        label = np.asarray(r_label, dtype=np.int64)
        if roll.size != offsets[-1]:
            label = label[roll]
        return cls(
            workloads=workloads,
            fleets=fleets,
            workload=wk,
            index=index,
            rollout=roll,
            attempt=att,
            arrival_s=rows["arrival_s"],
            start_s=rows["start_s"],
            finish_s=rows["finish_s"],
            state=rows["state"].astype(np.int8, copy=False),
            phase=rows["phase"].astype(np.int8, copy=False),
            build_s=rows["build_s"],
            agent_s=rows["agent_s"],
            verify_s=rows["verify_s"],
            label=label,
            rollout_arrival_s=np.asarray(r_arrival, dtype=float),
            steps=rl,
            preemptions=preemptions,
            area_busy=area_busy,
            area_wait=area_wait,
            end_s=end_s,
            engine=engine,
            n_rollouts=int(offsets[-1]),
        )

    # --- convenience views -------------------------------------------------------------
    @property
    def started(self) -> np.ndarray:
        """Mask of rows that held a sandbox."""
        return ~np.isnan(self.start_s)

    @property
    def hold_s(self) -> np.ndarray:
        return self.finish_s - self.start_s

    @property
    def terminal(self) -> np.ndarray:
        """Mask of rows that are their rollout's terminal attempt."""
        return self.state != RETRIED

    def derived(self) -> dict:
        """Arrays the invariants and the summary both read, computed once (do not modify them).

        ``started``: rows that held a sandbox; ``s0``/``s1``/``hold``: their start, finish and
        hold; ``waits``: per row, queue entry to start (or to the drop); ``term``: terminal
        rows; ``sojourn_start``/``sojourn_end``: per terminal row, the rollout's first arrival
        and its end, and ``sojourn`` their difference (the summary's and the steady-state
        analysis's time in system). Masks that select every row are skipped (no copies).
        """
        # Keyed on the arrays it reads, so replacing one (as tests do) recomputes it.
        key = (self.start_s, self.finish_s, self.arrival_s, self.state, self.rollout, self.rollout_arrival_s)
        d = self._derived
        if len(d.get("key", ())) != len(key) or any(a is not b for a, b in zip(d["key"], key)):
            d.clear()
            d["key"] = key
            started = ~np.isnan(self.start_s)
            all_started = bool(started.all())
            term = self.state != RETRIED
            all_term = bool(term.all())
            s0 = self.start_s if all_started else self.start_s[started]
            s1 = self.finish_s if all_started else self.finish_s[started]
            ends = self.start_s if all_started else np.where(started, self.start_s, self.finish_s)
            if all_term and self.rollout.size == self.n_rollouts:  # rows are rollouts 0..n-1
                sojourn_end, sojourn_start = self.finish_s, self.rollout_arrival_s
            else:
                sojourn_end = self.finish_s[term]
                sojourn_start = self.rollout_arrival_s[self.rollout[term]]
            arrival = self.arrival_s
            d.update(started=started, term=term, s0=s0, s1=s1, sojourn_start=sojourn_start, sojourn_end=sojourn_end,
                     lazy={"hold": lambda: s1 - s0, "waits": lambda: ends - arrival,
                           "sojourn": lambda: sojourn_end - sojourn_start})
        return d

    def micros(self, seconds: np.ndarray) -> np.ndarray:
        """``to_us(seconds)`` of one of this result's arrays; while the invariants run (they open
        and drop the cache) cached on the array itself, since the concurrency sweep and the
        Little's-law check both read the finish times."""
        from sandbox_fleet.measure.concurrency import to_us

        cache = self._derived.get("micros")
        if cache is None:
            return to_us(seconds)
        for arr, us in cache:
            if arr is seconds:
                return us
        us = to_us(seconds)
        cache.append((seconds, us))
        return us

    def concurrency_stats(self, pool: int | None = None) -> dict:
        """Sweep-line concurrency of all pools together (``None``) or of one pool; cached."""
        if pool not in self._sweeps:
            from sandbox_fleet.simulate.engine.metrics import concurrency

            if pool is not None and len(self.fleets) == 1:
                return self.concurrency_stats(None)
            sel = self.derived()["started"]
            if pool is not None:
                sel = sel & (np.array([wl.pool for wl in self.workloads])[self.workload] == pool)
            if pool is None and self.derived()["s0"].size == self.start_s.size:  # every row started: no copies
                from sandbox_fleet.measure.concurrency import interval_stats

                # = concurrency(start_s, finish_s), on the cached microsecond grids
                self._sweeps[pool] = interval_stats(self.micros(self.start_s), self.micros(self.finish_s))
            else:
                self._sweeps[pool] = concurrency(self.start_s[sel], self.finish_s[sel])
        return self._sweeps[pool]

    @property
    def events(self) -> int:
        """Events the model comprises, the same whichever loop ran: queue entries,
        attempt ends, slot refills (pools with a provisioning delay), build ends (pools
        with a start cap), RL releases and trainer steps, preemptions, model calls in and out."""
        n = int(self.state.size)
        started = self.started
        if len(self.fleets) == 1:  # one pool: its flags hold for every row (no per-row pool lookup)
            refill = self.fleets[0].provision_delay_s > 0
            build = self.fleets[0].start_cap is not None
        else:
            pool = np.array([wl.pool for wl in self.workloads])[self.workload]
            refill = np.array([f.provision_delay_s > 0 for f in self.fleets])[pool]
            build = np.array([f.start_cap is not None for f in self.fleets])[pool]
        rl = sum(1 + int(st["train_end_s"].size) for st in self.steps.values())
        calls = 2 * int(self.inference.sojourn_s.size) if self.inference is not None else 0  # call in, call out
        return 2 * n + int(np.count_nonzero(started & refill)) + int(np.count_nonzero(started & build)) + rl + self.preemptions + calls

    def state_names(self) -> np.ndarray:
        return np.asarray(STATE_NAMES, dtype=object)[self.state]

    def summary_model(self, *, timing: bool = False, pass_rate: float | None = None,
                      warmup_s: float | None = None, **head) -> SimulateSummary:
        """The run's ``SimulateSummary`` (see ``metrics.summarise``); ``timing`` adds wall-clock
        figures, ``pass_rate`` and ``warmup_s`` feed the steady-state block."""
        from sandbox_fleet.simulate.engine.metrics import summarise

        return summarise(self, timing=timing, pass_rate=pass_rate, warmup_s=warmup_s, **head)

    def summary(self, *, timing: bool = False, pass_rate: float | None = None, warmup_s: float | None = None,
                **head) -> dict:
        """``summary_model`` as its JSON dict (the convenience docs/simulate.md shows)."""
        return self.summary_model(timing=timing, pass_rate=pass_rate, warmup_s=warmup_s, **head).to_json()

    # --- telemetry ---------------------------------------------------------------------
    def to_telemetry(self, epoch: datetime = DEFAULT_EPOCH, *, include_retried: bool = True) -> pa.Table:
        """Canonical ROLLOUT_SCHEMA rows, one per attempt that held a sandbox.

        Simulated second ``t`` is ``epoch + t``, rounded to the microsecond. ``id`` is
        ``<workload>-<index>-<attempt>``; ``job`` the workload name; ``model`` the
        mixture label (or ``attrs["model"]``). A workload's ``attrs`` arrays fill the
        columns they name. Phases the model does not simulate are null, not zero.
        """
        import pyarrow as pa

        from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA

        keep = self.started if include_retried else self.started & self.terminal
        idx = np.flatnonzero(keep)
        base = int(epoch.timestamp() * 1_000_000)
        start_us = base + np.rint(self.start_s[idx] * 1e6).astype(np.int64)
        fin_us = base + np.rint(self.finish_s[idx] * 1e6).astype(np.int64)
        build_end = base + np.rint((self.start_s[idx] + self.build_s[idx]) * 1e6).astype(np.int64)
        agent_end = base + np.rint((self.start_s[idx] + self.build_s[idx] + self.agent_s[idx]) * 1e6).astype(np.int64)
        agent_end = np.minimum(agent_end, fin_us)
        build_end = np.minimum(build_end, fin_us)
        wk, ix, at = self.workload[idx], self.index[idx], self.attempt[idx]
        state, phase = self.state[idx], self.phase[idx]
        names = [wl.name for wl in self.workloads]
        n = idx.size
        has_build = np.array([(ep := wl.resolved_episode()).build is not None or ep.substrate is not None
                              for wl in self.workloads])[wk] if n else np.zeros(0, bool)
        has_verifier = np.array([wl.resolved_episode().verifier is not None for wl in self.workloads])[wk] if n else np.zeros(0, bool)
        reached_agent = phase != BUILD
        reached_verifier = reached_agent & (phase != AGENT) & ~((phase == PREEMPTION) & (self.verify_s[idx] == 0))
        exc = (phase != 0) | (state == TIMEOUT)
        exc_type = np.full(n, None, dtype=object)
        for code, label in EXCEPTION_TYPES.items():
            exc_type[phase == code] = label
        exc_type[(state == TIMEOUT) & (phase == 0)] = TIMEOUT_TYPE

        ids = [f"{names[w]}-{i}-{a}" for w, i, a in zip(wk.tolist(), ix.tolist(), at.tolist())]
        cols: dict[str, pa.Array] = {
            "id": pa.array(ids, pa.string()),
            "job": pa.DictionaryArray.from_arrays(pa.array(wk.astype(np.int32)), pa.array(names)).cast(pa.string()),
            "started_at": _ts(start_us),
            "finished_at": _ts(fin_us),
            "environment_setup_started_at": _ts(start_us, has_build),
            "environment_setup_finished_at": _ts(build_end, has_build),
            "agent_execution_started_at": _ts(build_end, reached_agent),
            "agent_execution_finished_at": _ts(agent_end, reached_agent),
            "verifier_started_at": _ts(agent_end, has_verifier & reached_verifier),
            "verifier_finished_at": _ts(fin_us, has_verifier & reached_verifier),
            "has_exception": pa.array(exc, pa.bool_()),
            "exception_type": pa.array(exc_type, pa.string()),
        }
        model = self._model_column(idx)
        if model is not None:
            cols["model"] = model
        if self.inference is not None:
            # Pool-served runs carry each rollout's tokens and turns, as real telemetry does.
            roll = self.rollout[idx]
            sr = self.inference
            for col, arr in (("input_tokens", sr.r_input), ("output_tokens", sr.r_output),
                             ("cached_tokens", sr.r_cached), ("turns", sr.r_turns)):
                cols[col] = pa.array(arr[roll], pa.int64())
        # Caller-supplied per-rollout attributes override what the engine derived.
        for col in sorted({c for wl in self.workloads for c in wl.attrs}):
            if col not in ROLLOUT_SCHEMA.names or col in ("id", "started_at", "finished_at"):
                continue
            cols[col] = self._attr_column(col, ROLLOUT_SCHEMA.field(col).type, wk, ix, cols.get(col))
        arrays = [cols[f.name] if f.name in cols else pa.nulls(n, f.type) for f in ROLLOUT_SCHEMA]
        return pa.Table.from_arrays(arrays, schema=ROLLOUT_SCHEMA)

    def _attr_column(self, col: str, typ: pa.DataType, wk: np.ndarray, ix: np.ndarray, derived: pa.Array | None) -> pa.Array:
        """Gather a caller attribute per row (rows are sorted by workload); NaN -> null."""
        import pyarrow as pa
        parts = []
        for w, wl in enumerate(self.workloads):
            sel = ix[wk == w]
            if col in wl.attrs:
                src = wl.attrs[col]
                src = np.asarray(src.to_pylist(), dtype=object) if isinstance(src, (pa.Array, pa.ChunkedArray)) else np.asarray(src)
                parts.append(src[sel])
            elif derived is not None:
                parts.append(np.asarray(derived.to_pylist(), dtype=object)[np.flatnonzero(wk == w)])
            else:
                parts.append(np.full(sel.size, None, dtype=object))
        kinds = {p.dtype.kind for p in parts}
        if len(parts) and kinds <= {"f", "i", "u", "b"} and len(kinds) == 1:
            vals = np.concatenate(parts)
            mask = np.isnan(vals) if vals.dtype.kind == "f" else None
            if mask is not None and pa.types.is_integer(typ):  # mask: the float case
                vals = np.where(mask, 0, vals).astype(np.int64)
            return pa.array(vals, mask=mask).cast(typ)
        vals = np.concatenate([p.astype(object) for p in parts]) if parts else np.zeros(0, dtype=object)
        out = [None if (isinstance(v, float) and v != v) else v for v in vals.tolist()]
        return pa.array(out, type=typ)

    def _model_column(self, idx: np.ndarray) -> pa.Array | None:
        import pyarrow as pa

        from sandbox_fleet.simulate.engine.distributions import Dist, mixture_of

        names_per_wl = []
        any_label = False
        for wl in self.workloads:
            ep = wl.resolved_episode()
            mix = mixture_of(ep.agent) if isinstance(ep.agent, Dist) else None
            labels = mix.labels if mix is not None and mix.labels else None
            names_per_wl.append(labels)
            any_label |= labels is not None
        if not any_label:
            return None
        out = np.full(idx.size, None, dtype=object)
        wk, lab = self.workload[idx], self.label[idx]
        for w, labels in enumerate(names_per_wl):
            if labels is None:
                continue
            sel = np.flatnonzero((wk == w) & (lab >= 0))
            out[sel] = np.asarray(labels, dtype=object)[lab[sel]]
        return pa.array(out.tolist(), pa.string())


class _Derived(dict):
    """``SimResult.derived``'s cache. ``hold`` and ``waits`` are computed when first read: the checks
    read them after the concurrency sweep, which then runs without them alive (a smaller peak, and
    they reuse the sweep's freed memory instead of fresh pages)."""

    def __missing__(self, key):
        make = self.get("lazy", {}).get(key)
        if make is None:
            raise KeyError(key)
        value = self[key] = make()
        return value


def _ts(us: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    import pyarrow as pa
    arr = pa.array(us, type=pa.int64(), mask=None if valid is None else ~np.asarray(valid, dtype=bool))
    return arr.cast(pa.timestamp("us", tz="UTC"))

