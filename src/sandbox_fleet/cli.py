"""Command-line front end: parse arguments, call library functions, print.

Each command's work lives in a documented library function; nothing here computes.
Bad input surfaces as ``InputError``: one line on stderr, exit status 2.
"""

# No ``from __future__ import annotations``: Typer reads every command's type hints (twice), and a
# string annotation is compiled on each read (~60 parameters for plan alone).
import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Optional, TypedDict

import typer

from sandbox_fleet import jsonio
from sandbox_fleet.cli_flags import FlagGroup
from sandbox_fleet.errors import InputError

if TYPE_CHECKING:
    from sandbox_fleet.contract import Summary
    from sandbox_fleet.simulate.model import Calibration
    from sandbox_fleet.synth.model import SynthSummary


class _AppSettings(TypedDict):
    cls: type
    add_completion: bool
    no_args_is_help: bool
    help: str


_APP_SETTINGS: _AppSettings = {
    "cls": FlagGroup,  # plain metavars in the root's --help too (cli_flags)
    "add_completion": True,
    "no_args_is_help": True,
    "help": "Size the container fleet behind agentic RL: measure, plan, simulate, report.",
}
app = typer.Typer(**_APP_SETTINGS)
_CONSOLES: dict = {}
#: Set by the root ``--quiet`` for the run: no readable summary, progress or "wrote" lines.
_STATE = {"quiet": False}


def _console(stderr: bool = False):
    """The Rich console on stdout (or stderr), made on first use: a plain-text command never imports Rich."""
    if stderr not in _CONSOLES:
        from rich.console import Console

        _CONSOLES[stderr] = Console(stderr=stderr)
    return _CONSOLES[stderr]


def __getattr__(name: str):
    # ``cli.out_console`` / ``cli.err_console`` as before, now made on first use
    if name in ("out_console", "err_console"):
        return _console(stderr=name == "err_console")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _print_version(value: bool) -> None:
    if value:
        from sandbox_fleet import __version__

        sys.stdout.write(f"sandbox-fleet {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_print_version, is_eager=True,
                                 help="Print the version and exit."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print only errors (and --json output): no readable "
                               "summary, progress or 'wrote' lines; the exit status is unchanged."),
) -> None:
    """Size the container fleet behind agentic RL: measure, plan, simulate, report."""
    if quiet:
        _STATE["quiet"] = True


_QUIET_FLAGS = ("--quiet", "-q")  # no command has a -q of its own


def _take_quiet(argv: list[str]) -> list[str]:
    """``argv`` without ``--quiet`` / ``-q`` (before any ``--``), which then holds for the run: the flag is
    accepted after the command too (``sandbox-fleet check ... --quiet``), not only before it."""
    cut = argv.index("--") if "--" in argv else len(argv)
    _STATE["quiet"] = any(a in _QUIET_FLAGS for a in argv[:cut])
    return [a for a in argv[:cut] if a not in _QUIET_FLAGS] + argv[cut:]


def _progress(wanted: bool) -> bool:
    return wanted and not _STATE["quiet"]


def _note(message: str) -> None:
    """One informational line on stderr (``wrote ...``), unless ``--quiet``."""
    if not _STATE["quiet"]:
        from sandbox_fleet.textout import printable

        # paths are text: a "[" in a file name is no markup, a newline no second line
        _console(stderr=True).print(printable(message), highlight=False, markup=False)


def _check_outputs(inputs: list, **outputs) -> None:
    """Refuse, before any work, outputs that are inputs, folders, devices, badly suffixed or unwritable.

    ``outputs``: option name (``o``, ``telemetry``...; an upper-case name is an argument, e.g.
    ``SCENARIO``) -> path, or -> (path, allowed suffixes).
    """
    from sandbox_fleet.outpaths import check_outputs

    paths, suffixes = {}, {}
    for name, value in outputs.items():
        option = "-o" if name == "o" else name if name.isupper() else f"--{name.replace('_', '-')}"
        path, allowed = value if isinstance(value, tuple) else (value, None)
        paths[option] = path
        if allowed:
            suffixes[option] = allowed
    check_outputs(paths, inputs=inputs, suffixes=suffixes)


def _emit(summary: "Summary | Calibration | SynthSummary", as_json: bool, output: Optional[Path], render,
          lines=None, emphasis=None) -> None:
    """Write JSON to -o (atomically), print JSON alone on stdout with --json, else a readable summary.

    ``summary`` is the command's model (a stage's summary, or what ``simulate --from`` and ``synth``
    made); the JSON writer dumps it once (``to_json``). ``render(summary, console)`` prints through Rich; a summary that is plain lines gives
    ``lines(summary)`` instead, printed without Rich when Rich would print them unchanged
    (``emphasis(lines)``: which lines a terminal shows in bold). Both get the same model, its text escaped.
    """
    if output is not None or as_json:  # a readable summary alone dumps nothing
        doc = summary.to_json()
        if output is not None:
            jsonio.write(doc, output)
        if as_json:
            sys.stdout.write(jsonio.dumps(doc))
            return
    if _STATE["quiet"]:
        return
    from sandbox_fleet.textout import print_lines, printable

    # text from the input reaches the terminal escaped (and, through Rich, never as markup)
    if lines is not None:
        print_lines([printable(line) for line in lines(summary)], _console, emphasis)  # every line: --previous's too
    else:
        render(printable(summary, markup=True), _console())


def _renderer(module: str, name: str):
    """``module.name(summary, console)``, imported only when a readable summary is printed:
    ``--json`` and ``-o`` never load Rich's tables (~50 ms of start-up)."""

    def render(summary, console) -> None:
        import importlib

        getattr(importlib.import_module(module), name)(summary, console)

    return render


# --- reader flags, shared by every command that reads telemetry ------------------------
_FORMAT = typer.Option(None, "--format", help="Force a reader: rst, harbor, terminal-bench, inspect, table.")
_MAP = typer.Option(None, "--map", help="canonical=source[,...] for generic tables.")
_TIME_UNIT = typer.Option(None, "--time-unit", help="Epoch unit for numeric times: s, ms, us, ns (default: detect).")
_ASSUME_TZ = typer.Option("UTC", "--assume-tz", help="Time zone for naive timestamps.")
_REWARD_KEY = typer.Option("reward", "--reward-key", help="Key in Harbor verifier_result.rewards.")
_SCORE = typer.Option(None, "--score", help="Inspect AI: the scorer whose value is the reward, or SCORER/KEY for one "
                      "entry of a dict score (default: the first scorer; a dict's first entry, with a warning).")
_LATEST = typer.Option("2100-01-01", "--latest-time", help="Reject rows with a time at or after this (ISO date or time).")
_ANY_TIME = typer.Option(False, "--allow-any-time", help="Accept times before 2000-01-01 or after --latest-time (up to year 9999).")
_CACHE_DIR = typer.Option(None, "--cache-dir", help="With --tasks: cache parsed task requests in DIR (default $SANDBOX_FLEET_CACHE_DIR, else cache/ beside -o; without either nothing is cached or written).")
_MIN_TURN_ROWS = typer.Option(20, "--min-turn-rows", help="Fit the turn curve on turn counts with at least this many rows.")
_MODEL = typer.Option(None, "--model", help="Telemetry: keep only these models (repeatable).")
_SINCE = typer.Option(None, "--since", help="Telemetry: keep rollouts started at or after this ISO time.")
_UNTIL = typer.Option(None, "--until", help="Telemetry: keep rollouts started before this ISO time.")
_PASS_THRESHOLD = typer.Option(None, "--pass-threshold", help="Telemetry: a reward at or above this passes (default 1).")
_TASKS = typer.Option(None, "--tasks", help="Tasks root (metadata/tasks.parquet + data/*.tar), when the input is telemetry.")
# The node replay's delays and placement (plan with telemetry, simulate --replay): one declaration, the
# defaults those of plan/mixed_replay.py (PROVISION_S, SCALE_DOWN_S; a test holds them equal)
_NODE_PROVISION_S = typer.Option(60.0, "--node-provision-s", help="Node replay (plan with telemetry, simulate --replay): a launched burst node joins this many seconds later.")
_NODE_SCALE_DOWN_S = typer.Option(300.0, "--node-scale-down-s", help="Node replay: an empty burst node is released this many seconds after its last sandbox ends (the NodePools' consolidateAfter).")
_NODE_PLACEMENT = typer.Option("pack", "--node-placement", help="Node replay: place each rollout on the most-allocated node (pack) or the least-allocated (spread).")
_GROUP_SIZE = typer.Option(None, "--group-size", help="Rollouts per RL group (GRPO's G) the informative-group shares are given for (default: the median recorded group, else 8).")


#: The reader options, declared once: (parameter, type, option). A command takes them all by
#: declaring ``reader: dict = READER_OPTIONS`` where they belong in its ``--help`` and decorating
#: itself with ``@_reads_telemetry``; it then gets them as one dict of these parameter names.
_READER_OPTIONS = (
    ("fmt", Optional[str], _FORMAT),
    ("column_map", Optional[str], _MAP),
    ("time_unit", Optional[str], _TIME_UNIT),
    ("assume_tz", str, _ASSUME_TZ),
    ("reward_key", str, _REWARD_KEY),
    ("score", Optional[str], _SCORE),
    ("latest_time", str, _LATEST),
    ("allow_any_time", bool, _ANY_TIME),
)
#: Marks the parameter ``_reads_telemetry`` replaces by the reader options.
READER_OPTIONS: dict = {}


def _reads_telemetry(command):
    """``command`` as Typer sees it: its ``reader = READER_OPTIONS`` parameter replaced, in place, by
    the eight reader options, which reach ``command`` as one dict (``reader``)."""
    import functools
    import inspect

    signature = inspect.signature(command)
    params = list(signature.parameters.values())
    at = next(i for i, p in enumerate(params) if p.default is READER_OPTIONS)
    options = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=option, annotation=kind)
               for name, kind, option in _READER_OPTIONS]

    @functools.wraps(command)
    def run(**kwargs):
        reader = {name: kwargs.pop(name) for name, _, _ in _READER_OPTIONS}
        return command(**kwargs, **{params[at].name: reader})

    run.__signature__ = signature.replace(parameters=[*params[:at], *options, *params[at + 1:]])  # type: ignore[attr-defined]
    hints = {k: v for k, v in command.__annotations__.items() if k != params[at].name}
    run.__annotations__ = {**hints, **{name: kind for name, kind, _ in _READER_OPTIONS}}
    return run


def _telemetry_filters(tasks: Optional[Path], cache_dir: Optional[Path], output: Optional[Path], **filters) -> dict:
    """``load_measure``'s telemetry keywords for a command that measures its input when it is
    telemetry: the tasks root (its cache as measure places it) and the filters."""
    cache = None
    if tasks is not None:
        from sandbox_fleet.telemetry.taskcache import cache_dir_for

        cache = cache_dir_for(cache_dir, output, tasks)
    return {"tasks": tasks, "cache_dir": cache, **filters}


def _read_options(reader: dict):
    """The reader options as the one validated ``ReadOptions`` the stages take (a bad flag is refused
    here, before any input is read)."""
    from sandbox_fleet.telemetry.options import make_options

    return make_options(**reader)


# --- measure ---------------------------------------------------------------------------
@app.command()
@_reads_telemetry
def measure(
    paths: list[Path] = typer.Argument(..., help="Telemetry: RST release, Harbor jobs, Terminal-Bench runs, or Parquet/CSV/JSONL files or globs."),
    tasks: Optional[Path] = typer.Option(None, "--tasks", help="Tasks root (metadata/tasks.parquet + data/*.tar)."),
    cache_dir: Optional[Path] = _CACHE_DIR,
    reader: dict = READER_OPTIONS,
    min_turn_rows: int = _MIN_TURN_ROWS,
    group_size: Optional[int] = _GROUP_SIZE,
    model: Optional[list[str]] = _MODEL,
    since: Optional[str] = _SINCE,
    until: Optional[str] = _UNTIL,
    pass_threshold: Optional[float] = _PASS_THRESHOLD,
    cap: Optional[int] = typer.Option(None, "--cap", help="The fleet's concurrency cap, when known (a harness's --workers / max_workers): reported as stated, checked by the touches rule. Per job: --map cap=COLUMN."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the JSON summary to FILE."),
    suggest_map: bool = typer.Option(False, "--suggest-map", help="Print only the --map value the table's column names and values suggest (canonical=source,...), its reasons on stderr; measure nothing."),
    out_of_core: Optional[bool] = typer.Option(None, "--out-of-core/--in-memory", help="Measure through DuckDB on disk (fewer figures, any size) or in memory (default: out of core when the input is over the memory budget)."),
    memory_budget_gb: Optional[float] = typer.Option(None, "--memory-budget-gb", help="Memory budget, GiB, the input is compared with (default: 75% of the memory available to this process)."),
) -> None:
    """Measure a rollout fleet from its telemetry."""
    from sandbox_fleet.measure import measure_paths
    from sandbox_fleet.telemetry.taskcache import cache_dir_for

    if suggest_map:
        _print_suggested_map(paths, reader)
        return
    _check_outputs([*paths, tasks], o=output)
    summary = measure_paths(
        [str(p) for p in paths],
        tasks=str(tasks) if tasks else None,
        read=_read_options(reader),
        min_turn_rows=min_turn_rows,
        group_size=group_size,
        models=model,
        since=since,
        until=until,
        pass_threshold=1.0 if pass_threshold is None else pass_threshold,
        progress=_progress(not as_json or sys.stderr.isatty()),
        cache_dir=cache_dir_for(cache_dir, output, tasks) if tasks else None,
        cap=cap,
        out_of_core=out_of_core,
        memory_budget_gb=memory_budget_gb,
        temp_parent=str(output.resolve().parent) if output else None,
    )
    from sandbox_fleet.measure.notices import warn_on_stderr

    warn_on_stderr(summary)
    _emit(summary, as_json, output, _renderer("sandbox_fleet.measure.render", "render_summary"))


def _print_suggested_map(paths: list[Path], reader: dict) -> None:
    from sandbox_fleet.telemetry.suggest_map import suggest_map

    if len(paths) != 1:
        raise InputError("--suggest-map reads one table: give one file or glob")
    proposal = suggest_map(str(paths[0]), _read_options(reader).column_map)
    for line in proposal.why:
        _note(line)
    sys.stdout.write(f"{proposal.spec or ''}\n")


# --- plan ------------------------------------------------------------------------------
@app.command()
@_reads_telemetry
def plan(
    path: Path = typer.Argument(..., help="A measure --json summary, or telemetry to measure first."),
    tasks: Optional[Path] = typer.Option(None, "--tasks", help="Tasks root, when PATH is telemetry."),
    cache_dir: Optional[Path] = _CACHE_DIR,
    model: Optional[list[str]] = _MODEL,
    since: Optional[str] = _SINCE,
    until: Optional[str] = _UNTIL,
    pass_threshold: Optional[float] = _PASS_THRESHOLD,
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help="Target: this many concurrent sandboxes."),
    batch: Optional[int] = typer.Option(None, "--batch", help="Target: a synchronous RL schedule of B rollouts per step."),
    train_s: Optional[float] = typer.Option(None, "--train-s", help="Trainer seconds per RL step (with --batch)."),
    passing_per_hour: Optional[float] = typer.Option(None, "--passing-per-hour", help="Target: passing rollouts per hour (Little's law)."),
    tolerance: float = typer.Option(0.01, "--tolerance", help="RL schedule: allowed slowdown of the mean step vs uncapped."),
    group_size: Optional[int] = _GROUP_SIZE,
    groups_per_batch: Optional[int] = typer.Option(None, "--groups-per-batch", help="Informative groups an RL step trains on (DAPO's B; default: --batch / G, else the measured step batch / G)."),
    signal_confidence: float = typer.Option(0.95, "--signal-confidence", help="Chance a dynamic-sampling release holds the B informative groups."),
    seed: int = typer.Option(0, "--seed", help="Seed for the RL-schedule simulation."),
    keep_cap: bool = typer.Option(False, "--keep-cap", help="A binding cap above the estimated demand: buy the cap (default: the demand)."),
    nodes: Optional[Path] = typer.Option(None, "--nodes", help="Node catalog TOML replacing the bundled one."),
    node_type: Optional[str] = typer.Option(None, "--node-type", help="Size this node type (default: cheapest priced that fits)."),
    reserve_cpu: Optional[float] = typer.Option(None, "--reserve-cpu", help="Per-node system reserve, cores (default: the node type's own)."),
    reserve_memory_gb: Optional[float] = typer.Option(None, "--reserve-memory-gb", help="Per-node system reserve, GiB memory."),
    reserve_disk_gb: Optional[float] = typer.Option(None, "--reserve-disk-gb", help="Per-node system reserve, GiB disk."),
    node_provision_s: float = _NODE_PROVISION_S,
    node_scale_down_s: float = _NODE_SCALE_DOWN_S,
    node_placement: str = _NODE_PLACEMENT,
    request: Optional[str] = typer.Option(None, "--request", help="Override task requests: CPUS,MEMORY_MB,STORAGE_MB[,GPUS]."),
    price_tier: Optional[str] = typer.Option(None, "--price-tier", help="Headline tier: reserved, on_demand, spot (default: from the duty cycle)."),
    prefix_break: float = typer.Option(0.0, "--prefix-break", help="Fraction of turns that break the cached prefix."),
    turns: Optional[float] = typer.Option(None, "--turns", help="Turn count for the caching saving when the input has no turn histogram."),
    gpu_prefill_tok_s: Optional[float] = typer.Option(None, "--gpu-prefill-tok-s", help="Per-GPU prefill tokens/s."),
    gpu_decode_tok_s: Optional[float] = typer.Option(None, "--gpu-decode-tok-s", help="Per-GPU decode tokens/s."),
    gpu_tflops: Optional[float] = typer.Option(None, "--gpu-tflops", help="Roofline: peak dense TFLOP/s per GPU."),
    gpu_hbm_tbs: Optional[float] = typer.Option(None, "--gpu-hbm-tbs", help="Roofline: HBM bandwidth, TB/s."),
    model_params_b: Optional[float] = typer.Option(None, "--model-params-b", help="Roofline: model parameters, billions."),
    kv_bytes_per_token: Optional[float] = typer.Option(None, "--kv-bytes-per-token", help="Roofline: KV-cache bytes per token."),
    utilisation: float = typer.Option(0.4, "--roofline-utilisation", help="Roofline: the achieved fraction of peak FLOPs and bandwidth (was --utilisation)."),
    bytes_per_param: float = typer.Option(2.0, "--bytes-per-param", help="Roofline: weight bytes per parameter."),
    decode_batch: int = typer.Option(64, "--decode-batch", help="Roofline: sequences decoded together."),
    context_tokens: float = typer.Option(32768.0, "--context-tokens", help="Roofline: mean context when the input cannot give it."),
    gpu_usd_h: Optional[float] = typer.Option(None, "--gpu-usd-h", help="Inference GPU price, USD per GPU-hour."),
    shape: str = typer.Option("auto", "--shape", help="--passing-per-hour: auto (from the measured step structure; both answers shown when they differ by over 1.5x), measured (keep the measured duty) or smooth (continuous admission)."),
    max_wait_s: float = typer.Option(60.0, "--max-wait-s", help="--shape smooth: allowed simulated mean queue wait, seconds."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="GPU type from the GPU catalog (memory, TFLOP/s, TB/s, $/h); per-figure flags override."),
    gpu_catalog: Optional[Path] = typer.Option(None, "--gpu-catalog", help="GPU catalog TOML replacing the bundled one."),
    gpu_memory_gb: Optional[float] = typer.Option(None, "--gpu-memory-gb", help="GPU memory per GPU, GiB (enables the memory model)."),
    gpu_memory_fraction: float = typer.Option(0.9, "--gpu-memory-fraction", help="Share of GPU memory the server may use."),
    gpu_utilisation: float = typer.Option(0.7, "--gpu-target-utilisation", help="The GPUs' target utilisation: headroom on top of the per-GPU rates (was --gpu-utilisation)."),
    max_tp: int = typer.Option(8, "--max-tp", help="Largest tensor-parallel replica (a power of two)."),
    kv_offload_gb: float = typer.Option(0.0, "--kv-offload-gb", help="Host memory per GPU for offloaded cached prefixes, GiB."),
    trainer_gpus: Optional[int] = typer.Option(None, "--trainer-gpus", help="Trainer GPUs to add to the all-in cost per passing trajectory."),
    providers: Optional[Path] = typer.Option(None, "--providers", help="Managed-sandbox catalog TOML replacing the bundled one (rent vs buy)."),
    rent_provider: Optional[list[str]] = typer.Option(None, "--rent-provider", help="Price renting on this provider only (repeatable; default: all in the catalog)."),
    budgets: Optional[Path] = typer.Option(None, "--budgets", help="Lifetime, rollout timeout and per-phase budgets TOML: lint them (limits.lifetime; docs/providers.md)."),
    emit_harbor: Optional[Path] = typer.Option(None, "--emit-harbor", help="Write a Harbor job-config fragment (n_concurrent_trials, timeouts) that stays inside the limits to FILE."),
    substrates: Optional[Path] = typer.Option(None, "--substrates", help="Execution-substrate catalog TOML (cold start, per-action overhead) replacing the bundled one."),
    backtest: Optional[Path] = typer.Option(None, "--backtest", help="A backtest --json summary: carry its simulator error and drift verdict into the purchase order."),
    previous: Optional[Path] = typer.Option(None, "--previous", help="An earlier plan --json: say what changed since (nodes, GPUs, $/h and the figures that moved them)."),
    emit_k8s: Optional[Path] = typer.Option(None, "--emit-k8s", help="Write Kubernetes manifests (Karpenter NodePool, agent-sandbox SandboxTemplate/SandboxWarmPool) into DIR."),
    force: bool = typer.Option(False, "--force", help="With --emit-k8s: write into a non-empty DIR."),
    k8s_name: Optional[str] = typer.Option(None, "--k8s-name", help="With --emit-k8s: name of the NodePools and PriorityClass, prefix of the templates (default: sf-<instance type>-<target>)."),
    k8s_namespace: Optional[str] = typer.Option(None, "--k8s-namespace", help="With --emit-k8s: namespace of the sandbox objects (default: the --k8s-name)."),
    k8s_node_class: Optional[str] = typer.Option(None, "--k8s-node-class", help="With --emit-k8s: name of the EC2NodeClass / AKSNodeClass written and referenced (default: the --k8s-name)."),
    k8s_runtime_class: str = typer.Option("runc", "--k8s-runtime-class", help="With --emit-k8s: runc (the node's default runtime), gvisor (a RuntimeClass and a node class that installs it; AWS AL2023), or a runtime class the cluster has (e.g. kata)."),
    k8s_cluster: Optional[str] = typer.Option(None, "--k8s-cluster", help="With --emit-k8s (required): the cluster name in the node class's discovery tags and node role."),
    k8s_ami_alias: str = typer.Option("al2023@latest", "--k8s-ami-alias", help="With --emit-k8s: the EC2NodeClass's AMI alias, family@version; pin it in production (e.g. al2023@v20240807)."),
    k8s_provision_s: float = typer.Option(60.0, "--k8s-provision-s", help="With --emit-k8s: seconds to create a sandbox pod (sizes the warm pool)."),
    k8s_image: str = typer.Option("REPLACE-ME/sandbox:latest", "--k8s-image", help="With --emit-k8s: the sandbox container image."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the JSON plan to FILE."),
    detail: bool = typer.Option(False, "--detail", help="Print the whole purchase order (every line, its basis, the assumptions), not only the decision."),
    csv_out: Optional[Path] = typer.Option(None, "--csv", help="Write the order and its assumptions as rows (section, key, value, unit, basis) to FILE (.csv)."),
    reader: dict = READER_OPTIONS,
    min_turn_rows: int = _MIN_TURN_ROWS,
) -> None:
    """Plan what to buy: nodes, storage, inference GPUs and cost."""
    from sandbox_fleet.limits import check_seed
    from sandbox_fleet.measure.load import is_summary_file, load_measure
    from sandbox_fleet.plan import PlanOptions, make_plan, make_reserve, make_roofline, parse_request
    from sandbox_fleet.plan.gpu_select import gpu_figures
    from sandbox_fleet.plan.render import plan_lines, render_plan

    check_seed(seed)
    _check_outputs([path, tasks, nodes, gpu_catalog, providers, substrates, backtest, previous, budgets], o=output,
                   csv=(csv_out, (".csv",)))
    if emit_harbor is not None:
        _check_outputs([path, tasks, nodes, gpu_catalog, providers, substrates, backtest, previous, budgets, output],
                       emit_harbor=emit_harbor)
    old_plan = None
    if previous is not None:  # a bad file is refused before the planning work
        from sandbox_fleet.report.inputs import load_plan

        old_plan = load_plan(previous)
    if emit_k8s is not None:
        from sandbox_fleet.plan.k8s import NODE_CLASS, K8sOptions, check_options, check_out_dir

        check_out_dir(emit_k8s, [path, tasks, nodes, gpu_catalog, providers, substrates, backtest, previous, output],
                      force)  # before the planning
        k8s_opts = K8sOptions(name=k8s_name, namespace=k8s_namespace, node_class=k8s_node_class,
                              runtime_class=k8s_runtime_class, cluster=k8s_cluster, provision_s=k8s_provision_s,
                              image=k8s_image, nodes_file=str(nodes) if nodes else None, ami_alias=k8s_ami_alias)
        check_options(k8s_opts)
    g = gpu_figures(
        gpu, str(gpu_catalog) if gpu_catalog else None, tflops=gpu_tflops, hbm_tbs=gpu_hbm_tbs,
        memory_gb=gpu_memory_gb, usd_h=gpu_usd_h, model_given=model_params_b is not None and kv_bytes_per_token is not None,
    )

    opts = PlanOptions(
        concurrency=concurrency, batch=batch, train_s=train_s, passing_per_hour=passing_per_hour,
        rl_tolerance=tolerance, seed=seed, nodes_file=str(nodes) if nodes else None, node_type=node_type,
        reserve=make_reserve(reserve_cpu, reserve_memory_gb, reserve_disk_gb),
        request=parse_request(request) if request else None, price_tier=price_tier.replace("-", "_") if price_tier is not None else None,
        prefix_break=prefix_break, turns=turns, gpu_prefill_tok_s=gpu_prefill_tok_s,
        providers_file=str(providers) if providers else None, rent_providers=rent_provider,
        substrates_file=str(substrates) if substrates else None, budgets_file=str(budgets) if budgets else None,
        gpu_decode_tok_s=gpu_decode_tok_s, gpu_usd_h=g.usd_h,
        roofline=make_roofline(
            gpu_tflops=g.tflops, gpu_hbm_tbs=g.hbm_tbs, model_params_b=model_params_b,
            kv_bytes_per_token=kv_bytes_per_token, utilisation=utilisation, bytes_per_param=bytes_per_param,
            decode_batch=decode_batch, context_tokens=context_tokens,
        ),
        shape=shape, max_wait_s=max_wait_s, gpu_name=g.name, gpu_note=g.note, gpu_from_catalog=g.from_catalog, gpu_memory_gb=g.memory_gb, gpu_memory_fraction=gpu_memory_fraction,
        gpu_utilisation=gpu_utilisation, max_tp=max_tp, kv_offload_gb=kv_offload_gb, trainer_gpus=trainer_gpus,
        node_providers=tuple(sorted(NODE_CLASS)) if emit_k8s is not None else None, keep_cap=keep_cap,
        node_provision_s=node_provision_s, node_scale_down_s=node_scale_down_s, node_placement=node_placement,
        group_size=group_size, groups_per_batch=groups_per_batch, signal_confidence=signal_confidence,
        warm_cold_start_s=k8s_provision_s if emit_k8s is not None else None,
    )
    cache = None
    if tasks:  # telemetry measured with its tasks (a .json input never reads the tasks root)
        from sandbox_fleet.telemetry.taskcache import cache_dir_for

        cache = cache_dir_for(cache_dir, output, tasks)
    verdict = None
    if backtest is not None:  # a bad file is refused before the planning work
        from sandbox_fleet.plan import backtest_block

        verdict = backtest_block(backtest)
    measured = load_measure(path, tasks=tasks, read=_read_options(reader), min_turn_rows=min_turn_rows, cache_dir=cache,
                            models=model, since=since, until=until, pass_threshold=pass_threshold)
    history = None
    if not is_summary_file(path):  # telemetry: the mixed purchase is priced by replaying its rollouts on nodes
        from sandbox_fleet.measure.intervals import load_intervals

        history = load_intervals(path, tasks=tasks, read=_read_options(reader), cache_dir=cache,
                                 models=model, since=since, until=until)
    planned = make_plan(measured, opts, input_path=path, backtest=verdict, history=history)
    if emit_k8s is not None:
        from sandbox_fleet.plan.k8s import emit_k8s as write_manifests

        written = write_manifests(planned, emit_k8s, k8s_opts, force=force, inputs=[path, tasks, nodes, providers, output])
        _note(f"wrote {', '.join(str(p) for p in written)}")
    if emit_harbor is not None:
        from sandbox_fleet.plan.harbor import write_fragment

        _note(f"wrote {write_fragment(planned, emit_harbor)}")
    if csv_out is not None:
        from sandbox_fleet.plan.rows import write_csv

        _note(f"wrote {write_csv(planned, csv_out)}")
    if as_json:
        _emit(planned, as_json, output, render_plan, lines=plan_lines)
        return
    from sandbox_fleet.plan.render_short import buy_marks, short_lines
    from sandbox_fleet.report.decision import plan_risks
    from sandbox_fleet.textout import terminal_width

    risks = plan_risks(measured, planned)
    _emit(planned, as_json, output, render_plan, lines=lambda p: (plan_lines if detail else short_lines)(
        p, previous=old_plan, risks=risks, width=terminal_width(), previous_name=str(previous)), emphasis=buy_marks)


# --- report ----------------------------------------------------------------------------
_ALLOW_MISMATCH = typer.Option(False, "--allow-mismatch", help="Accept a plan or optimize summary made from another measure summary than INPUT (refused otherwise, exit 2).")


@app.command()
@_reads_telemetry
def report(
    paths: list[Path] = typer.Argument(..., help="A measure --json summary, or telemetry paths to measure first."),
    tasks: Optional[Path] = _TASKS,
    cache_dir: Optional[Path] = _CACHE_DIR,
    model: Optional[list[str]] = _MODEL,
    since: Optional[str] = _SINCE,
    until: Optional[str] = _UNTIL,
    pass_threshold: Optional[float] = _PASS_THRESHOLD,
    plan: Optional[Path] = typer.Option(None, "--plan", help="A plan --json summary to include."),
    simulate: Optional[Path] = typer.Option(None, "--simulate", help="A simulate --json summary to include."),
    optimize: Optional[Path] = typer.Option(None, "--optimize", help="An optimize --json summary: its winner and Pareto frontier."),
    backtest: Optional[Path] = typer.Option(None, "--backtest", help="A backtest --json summary: its verdict, B's predicted vs actual concurrency, the drift gate."),
    previous: Optional[Path] = typer.Option(None, "--previous", help="An earlier plan --json: the decision block says what changed since."),
    thresholds: Optional[Path] = typer.Option(None, "--thresholds", help="TOML file overriding check thresholds."),
    title: str = typer.Option("Sandbox fleet report", "--title", help="Page title."),
    output: Path = typer.Option(..., "-o", "--output", help="HTML file to write."),
    allow_mismatch: bool = _ALLOW_MISMATCH,
    reader: dict = READER_OPTIONS,
    min_turn_rows: int = _MIN_TURN_ROWS,
) -> None:
    """Write one self-contained HTML report (charts, tables, check results) that works offline."""
    import shlex

    from sandbox_fleet.measure.load import load_measure
    from sandbox_fleet.report.commands import report_files

    _check_outputs([*paths, tasks, plan, simulate, optimize, thresholds, backtest, previous], o=(output, (".html", ".htm")))
    measured = load_measure(paths, read=_read_options(reader), min_turn_rows=min_turn_rows, **_telemetry_filters(
        tasks, cache_dir, output, models=model, since=since, until=until, pass_threshold=pass_threshold))
    path = report_files(measured, output, plan=plan, simulate=simulate, thresholds=thresholds, title=title,
                        optimize=optimize, backtest=backtest, allow_mismatch=allow_mismatch, previous=previous,
                        command=shlex.join(["sandbox-fleet", *sys.argv[1:]]))
    _note(f"wrote {path}")


# --- check -----------------------------------------------------------------------------
@app.command()
@_reads_telemetry
def check(
    paths: list[Path] = typer.Argument(..., help="A measure --json summary, or telemetry paths to measure first."),
    tasks: Optional[Path] = _TASKS,
    cache_dir: Optional[Path] = _CACHE_DIR,
    model: Optional[list[str]] = _MODEL,
    since: Optional[str] = _SINCE,
    until: Optional[str] = _UNTIL,
    pass_threshold: Optional[float] = _PASS_THRESHOLD,
    plan: Optional[Path] = typer.Option(None, "--plan", help="A plan --json summary (enables plan_covers_peak)."),
    simulate: Optional[Path] = typer.Option(None, "--simulate", help="A simulate --json summary (enables simulation_steady: an unstable run fails)."),
    thresholds: Optional[Path] = typer.Option(None, "--thresholds", help="TOML file overriding check thresholds."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as one JSON object {schema_version, kind, results} on stdout."),
    strict: bool = typer.Option(False, "--strict", help="Treat warnings as failures (exit 1)."),
    metrics_out: Optional[Path] = typer.Option(None, "--metrics-out", help="Also write the figures as Prometheus metrics (text exposition) to FILE."),
    backtest: Optional[Path] = typer.Option(None, "--backtest", help="A backtest --json summary: add the backtest_drift gate (constants drifted, simulator makespan error)."),
    prometheus_rules: Optional[Path] = typer.Option(None, "--prometheus-rules", help="Also write the gates as Prometheus alerting rules (YAML) to FILE (.yml or .yaml)."),
    grafana_dashboard: Optional[Path] = typer.Option(None, "--grafana-dashboard", help="Also write a Grafana dashboard (JSON) over the --metrics-out metrics to FILE (.json), the thresholds as its colours."),
    allow_mismatch: bool = _ALLOW_MISMATCH,
    serving_rules: bool = typer.Option(False, "--serving-rules", help="With --plan and --prometheus-rules: add rules over the serving pool's vLLM / SGLang metrics (prefix-cache hits, KV usage, queue time), the plan's assumptions as thresholds."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the results as JSON ({schema_version, kind, results}, as --json prints) to FILE."),
    reader: dict = READER_OPTIONS,
    min_turn_rows: int = _MIN_TURN_ROWS,
) -> None:
    """Gate a fleet on the failure modes of agentic rollout fleets (CI-friendly).

    Exit status: 0 = no check failed (warnings allowed).
    1 = a check failed (with --strict, a warning also fails).
    2 = bad input: unreadable summary or thresholds file, unknown threshold key.
    --metrics-out, --prometheus-rules, --grafana-dashboard and -o are written before the exit status is returned.
    """
    from sandbox_fleet.measure.load import load_measure
    from sandbox_fleet.report.checks import exit_code
    from sandbox_fleet.report.commands import check_files, print_checks

    _check_outputs([*paths, tasks, plan, simulate, thresholds, backtest], metrics_out=metrics_out,
                   prometheus_rules=(prometheus_rules, (".yml", ".yaml")), o=(output, (".json",)),
                   grafana_dashboard=(grafana_dashboard, (".json",)))
    if serving_rules and (plan is None or prometheus_rules is None):
        raise InputError("--serving-rules needs --plan (its thresholds) and --prometheus-rules (the file to write)")
    measured = load_measure(paths, read=_read_options(reader), min_turn_rows=min_turn_rows, **_telemetry_filters(
        tasks, cache_dir, output, models=model, since=since, until=until, pass_threshold=pass_threshold))
    results = check_files(measured, plan=plan, thresholds=thresholds, metrics_out=metrics_out, rules_out=prometheus_rules,
                          serving_rules=serving_rules, backtest=backtest, allow_mismatch=allow_mismatch, simulate=simulate,
                          dashboard_out=grafana_dashboard)
    if as_json or output is not None:
        from sandbox_fleet.report.checks.model import checks_summary

        summary = checks_summary(results)
        if output is not None:
            jsonio.write(summary, output)
        if as_json:
            sys.stdout.write(jsonio.dumps(summary))
    if not as_json and not _STATE["quiet"]:
        print_checks(results, _console)
    raise typer.Exit(code=exit_code(results, strict))


# --- simulate --------------------------------------------------------------------------
@app.command()
@_reads_telemetry
def simulate(
    scenario: Optional[Path] = typer.Argument(None, help="Scenario TOML to run (with --from: the scenario file to write; none with --replay)."),
    from_: Optional[list[Path]] = typer.Option(None, "--from", help="Measured telemetry: write SCENARIO calibrated from it (repeatable)."),
    replay: Optional[list[Path]] = typer.Option(None, "--replay", help="Measured telemetry: replay these exact rollouts (no draws) on nodes, the plan's order by default (repeatable)."),
    tasks: Optional[Path] = typer.Option(None, "--tasks", help="With --replay: the tasks root (each rollout's cpu / memory / disk request)."),
    cache_dir: Optional[Path] = _CACHE_DIR,
    model: Optional[list[str]] = _MODEL,
    since: Optional[str] = _SINCE,
    until: Optional[str] = _UNTIL,
    nodes: Optional[Path] = typer.Option(None, "--nodes", help="With --replay: node catalog TOML replacing the bundled one."),
    node_type: Optional[str] = typer.Option(None, "--node-type", help="With --replay: the node type (default: the plan's)."),
    reserved_nodes: Optional[int] = typer.Option(None, "--reserved-nodes", help="With --replay: reserved nodes, always up (default: the plan's mixed purchase)."),
    burst_nodes: Optional[int] = typer.Option(None, "--burst-nodes", help="With --replay: the burst pool's most nodes (default: the plan's burst NodePool limit)."),
    burst_tier: Optional[str] = typer.Option(None, "--burst-tier", help="With --replay: on-demand or spot (default: the plan's)."),
    node_provision_s: float = _NODE_PROVISION_S,
    node_scale_down_s: float = _NODE_SCALE_DOWN_S,
    node_placement: str = _NODE_PLACEMENT,
    reclaim_per_node_h: Optional[float] = typer.Option(None, "--reclaim-per-node-h", help="With --replay: spot reclaims per node-hour, Poisson per node (default: the node type's catalog rate; 0: none)."),
    reclaim_trace: Optional[Path] = typer.Option(None, "--reclaim-trace", help="With --replay: a CSV of reclaims, header time,pool (time: seconds from the first start, or an ISO 8601 timestamp as a cloud's interruption events carry it, UTC without an offset; or header epoch_s,pool: Unix seconds; pool reserved, burst or fleet)."),
    telemetry: Optional[Path] = typer.Option(None, "--telemetry", help="Write per-rollout canonical telemetry (Parquet) here."),
    timing: bool = typer.Option(False, "--timing", help="Add wall-clock figures (wall_s, events_per_s); output then varies run to run."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Override the scenario's run.seed; with --from: the seed written into the scenario."),
    max_memory_gb: Optional[float] = typer.Option(None, "--max-memory-gb", help="Refuse a scenario whose estimated memory exceeds this (default: 75% of available memory)."),
    force: bool = typer.Option(False, "--force", help="With --from: replace an existing scenario file."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the JSON summary to FILE."),
    inference: bool = typer.Option(False, "--inference", help="With --from: write the turns and inference tables from the measured tokens and turns."),
    reference_decode_tok_s: float = typer.Option(50.0, "--reference-decode-tok-s", help="With --inference: per-sequence decode rate assumed for the measured fleet."),
    replica_decode_tok_s: float = typer.Option(3000.0, "--replica-decode-tok-s", help="With --inference: decode tok/s per replica written into the inference table."),
    replica_prefill_tok_s: float = typer.Option(30000.0, "--replica-prefill-tok-s", help="With --inference: prefill tok/s per replica written into the inference table."),
    reader: dict = READER_OPTIONS,
) -> None:
    """Simulate a sandbox fleet from a scenario file, or calibrate one with --from."""
    from sandbox_fleet.limits import check_seed

    check_seed(seed)
    if replay:
        from sandbox_fleet.plan import PlanOptions
        from sandbox_fleet.plan.fleet_replay import ReplayOptions, check_options, replay_telemetry

        if scenario is not None or from_ or telemetry is not None or inference:
            raise InputError("--replay: runs no scenario; give TELEMETRY after --replay and no SCENARIO, --from, --telemetry or --inference")
        _check_outputs([*replay, tasks, nodes, reclaim_trace], o=output)
        ropts = ReplayOptions(reserved_nodes=reserved_nodes, burst_nodes=burst_nodes,
                              burst_tier=burst_tier.replace("-", "_") if burst_tier is not None else None,
                              reclaim_per_node_h=reclaim_per_node_h,
                              reclaim_trace=str(reclaim_trace) if reclaim_trace is not None else None,
                              seed=0 if seed is None else seed)
        check_options(ropts)
        popts = PlanOptions(nodes_file=str(nodes) if nodes else None, node_type=node_type,
                            node_provision_s=node_provision_s, node_scale_down_s=node_scale_down_s,
                            node_placement=node_placement, seed=0 if seed is None else seed)
        cache = None
        if tasks:
            from sandbox_fleet.telemetry.taskcache import cache_dir_for

            cache = cache_dir_for(cache_dir, output, tasks)
        replayed = replay_telemetry(replay, popts, ropts, tasks=tasks, read=_read_options(reader), cache_dir=cache,
                                    progress=_progress(not as_json), models=model, since=since, until=until)
        _emit(replayed, as_json, output, _renderer("sandbox_fleet.simulate.render", "render_summary"))
        return
    if scenario is None:
        raise InputError("SCENARIO: a scenario TOML to run is required (or --replay TELEMETRY)")
    if from_:
        from sandbox_fleet.simulate.scenario.calibrate import scenario_from_telemetry

        if telemetry is not None:
            raise InputError("--telemetry: with --from, simulate writes a scenario, not telemetry; run the scenario to get telemetry")
        _check_outputs(list(from_), SCENARIO=(scenario, (".toml",)), o=output)
        if scenario.exists() and not force:
            raise InputError(f"{scenario}: already exists; pass --force to overwrite the scenario")
        inf = None
        if inference:
            inf = {"reference_decode_tok_s": reference_decode_tok_s, "replica_decode_tok_s": replica_decode_tok_s,
                   "replica_prefill_tok_s": replica_prefill_tok_s}
        summary: Summary | Calibration = scenario_from_telemetry([str(p) for p in from_], scenario, seed=1 if seed is None else seed,
                                          progress=_progress(not as_json), inference=inf,
                                          read=_read_options(reader), models=model, since=since, until=until)
    else:
        if inference:
            raise InputError("--inference applies only with --from (to calibrate a scenario)")
        if model or since is not None or until is not None:
            raise InputError("--model/--since/--until filter telemetry: give them with --from or --replay "
                             "(a scenario keeps its rows with a [filter] table)")
        from sandbox_fleet.simulate.scenario.run import simulate_scenario

        _check_outputs([scenario], o=output, telemetry=(telemetry, (".parquet",)))
        summary = simulate_scenario(scenario, telemetry_out=telemetry, timing=timing, progress=_progress(not as_json),
                                    seed=seed, max_memory_gb=max_memory_gb)
    _emit(summary, as_json, output,
          _renderer("sandbox_fleet.simulate.render", "render_calibration" if from_ else "render_summary"))


# --- synth -----------------------------------------------------------------------------
@app.command()
def synth(
    out: Path = typer.Argument(..., help="Folder to write the release into (new, empty, or an earlier synth release)."),
    preset: str = typer.Option("rst", "--preset", help="Which published campaign to simulate: rst."),
    scale: float = typer.Option(1.0, "--scale", help="Multiply rollouts, cap, batch sizes and tasks by S (span and rates stay)."),
    seed: int = typer.Option(1, "--seed", help="Random seed: the same seed writes the same bytes."),
    force: bool = typer.Option(False, "--force", help="Replace an existing release in OUT."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the JSON summary to FILE."),
) -> None:
    """Simulate a published campaign and write it as an RST-style release (trajectories + tasks)."""
    from sandbox_fleet.synth import synth as build_release
    from sandbox_fleet.synth.build import check_args, check_out

    check_args(preset, scale, seed)
    check_out(out, force)
    _check_outputs([out], o=output)
    summary = build_release(out, preset=preset, scale=scale, seed=seed, progress=_progress(not as_json), force=force)
    _emit(summary, as_json, output, _renderer("sandbox_fleet.synth.render", "render_synth"))


# --- sweep -----------------------------------------------------------------------------
@app.command()
def sweep(
    scenario: Path = typer.Argument(..., help="Scenario TOML to vary."),
    vary: list[str] = typer.Option(..., "--vary", help="KEY=V1,V2,... or KEY=START:STOP:STEP (repeatable; cartesian product)."),
    seeds: int = typer.Option(1, "--seeds", help="Replicates per variant: seeds run.seed + 0..N-1; mean and sd reported."),
    backend: str = typer.Option("local", "--backend", help="local (process pool) or ray."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Parallel workers (default: cores; 1 = in-process)."),
    metric: Optional[list[str]] = typer.Option(None, "--metric", help="Extra summary key to tabulate, e.g. workloads.rl.step_s.mean (repeatable)."),
    target: Optional[str] = typer.Option(None, "--target", help="Knee finder: the metric to protect, e.g. step_s.mean."),
    within: Optional[float] = typer.Option(None, "--within", help="Knee finder: allowed relative distance from the best (or unbounded) run (default 0.01)."),
    within_abs: Optional[float] = typer.Option(None, "--within-abs", help="Knee finder: allowed absolute distance, in the target's units (for targets whose best is 0)."),
    knee_over: Optional[str] = typer.Option(None, "--knee-over", help="Knee finder: the numeric swept key (default: the first swept *.cap, else the first numeric one)."),
    goal: Optional[str] = typer.Option(None, "--goal", help="Knee finder: min or max is best (default: min, max for completed/utilisation)."),
    max_variants: int = typer.Option(10_000, "--max-variants", help="Refuse a grid of more variants than this, before running any."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the table to FILE (.csv, .parquet or .json)."),
) -> None:
    """What-if sweep: run a scenario over a grid of settings and tabulate key figures."""
    from sandbox_fleet.sweep import run_sweep, write
    from sandbox_fleet.sweep.output import SUFFIXES
    from sandbox_fleet.sweep.render import render_sweep

    _check_outputs([scenario], o=(output, SUFFIXES))
    result = run_sweep(scenario, vary, seeds=seeds, backend=backend, workers=workers, metrics=metric, target=target,
                       within=within if within is not None or within_abs is not None else 0.01,
                       within_abs=within_abs, over=knee_over, goal=goal, progress=_progress(not as_json), max_variants=max_variants)
    if output is not None:
        write(result, output)
    if as_json:
        sys.stdout.write(jsonio.dumps(result))
    elif not _STATE["quiet"]:
        render_sweep(result, _console())


# --- optimize --------------------------------------------------------------------------
@app.command()
def optimize(
    input_path: Path = typer.Argument(..., metavar="INPUT", help="A scenario (.toml) with token draws (its turns table) and an inference table, or a measure summary (.json) with token telemetry."),
    passing_per_hour: Optional[float] = typer.Option(None, "--passing-per-hour", help="Target: passing trajectories per hour."),
    batch: Optional[int] = typer.Option(None, "--batch", help="Target: synchronous RL batch (with --max-step-s)."),
    train_s: float = typer.Option(0.0, "--train-s", help="Trainer seconds per step (with --batch)."),
    max_step_s: Optional[float] = typer.Option(None, "--max-step-s", help="Target: longest mean step, seconds (with --batch)."),
    steps: int = typer.Option(2, "--steps", help="RL steps simulated per candidate (with --batch)."),
    scale: float = typer.Option(1.0, "--scale", help="Simulate this fraction of the input's rollouts per candidate."),
    count: Optional[int] = typer.Option(None, "--count", help="Rollouts per simulation (replaces --scale)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Base seed of every candidate (default: the input's run.seed)."),
    backend: str = typer.Option("local", "--backend", help="local (process pool) or ray."),
    workers: Optional[int] = typer.Option(None, "--workers", help="Parallel workers (default: cores; 1 = in-process)."),
    gpu: Optional[list[str]] = typer.Option(None, "--gpu", help="GPU type to search (repeatable; default: every catalog type that holds the model)."),
    gpus_per_replica: Optional[int] = typer.Option(None, "--gpus-per-replica", help="GPUs per replica (default: the fewest of 1, 2, 4, 8 that hold the model)."),
    caching: str = typer.Option("both", "--caching", help="Prefix caching: on, off or both."),
    kv_offload_gb: Optional[list[float]] = typer.Option(None, "--kv-offload-gb", help="Host KV offload per replica, GiB, to search (repeatable; default: the input's)."),
    max_replicas: int = typer.Option(16, "--max-replicas", help="Most replicas searched."),
    max_cap: Optional[int] = typer.Option(None, "--max-cap", help="Largest sandbox cap searched (default: 2 x the input's cap; the batch with --batch)."),
    cap_step: Optional[int] = typer.Option(None, "--cap-step", help="Cap lattice step (default: max cap / 32)."),
    reps: int = typer.Option(5, "--reps", help="Replications of the winner."),
    search_reps: int = typer.Option(1, "--search-reps", help="Replications of each candidate during the search."),
    screen_holds: int = typer.Option(24, "--screen-holds", help="Search runs stop after this many holds per sandbox (0: full length); the winner is confirmed at full length."),
    pass_rate: Optional[float] = typer.Option(None, "--pass-rate", help="Share of completed rollouts that pass (default: measured, or 1 for a scenario)."),
    model_params_b: Optional[float] = typer.Option(None, "--model-params-b", help="Model size, billions (measure INPUT; default 27, stated)."),
    kv_bytes_per_token: Optional[float] = typer.Option(None, "--kv-bytes-per-token", help="KV bytes per token (measure INPUT; default 65536, stated)."),
    request: Optional[str] = typer.Option(None, "--request", help="Override the sandbox request, as plan takes it: CPUS,MEMORY_MB,STORAGE_MB (default: the measured requests, else plan's default)."),
    sandbox_cpu: Optional[float] = typer.Option(None, "--sandbox-cpu", hidden=True, help="Deprecated: --request."),
    sandbox_memory_gb: Optional[float] = typer.Option(None, "--sandbox-memory-gb", hidden=True, help="Deprecated: --request."),
    sandbox_disk_gb: Optional[float] = typer.Option(None, "--sandbox-disk-gb", hidden=True, help="Deprecated: --request."),
    node_type: Optional[list[str]] = typer.Option(None, "--node-type", help="Node types to price (repeatable; default: every priced type)."),
    write_scenario: Optional[Path] = typer.Option(None, "--write-scenario", help="Write the winner as a scenario TOML that simulate reproduces."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the JSON summary to FILE."),
) -> None:
    """The cheapest sandbox fleet + GPU pool whose simulated closed loop meets a target."""
    from sandbox_fleet import atomic
    from sandbox_fleet.measure.load import load_measure
    from sandbox_fleet.optimize import run_optimize

    _check_outputs([input_path], o=(output, (".json",)), write_scenario=(write_scenario, (".toml",)))
    if request is not None:
        from sandbox_fleet.plan import parse_request

        if sandbox_cpu is not None or sandbox_memory_gb is not None or sandbox_disk_gb is not None:
            raise InputError("--request replaces --sandbox-cpu/--sandbox-memory-gb/--sandbox-disk-gb: give one or the other")
        q = parse_request(request)
        if q.gpu:
            raise InputError(f"--request {request!r}: optimize sizes CPU sandboxes; leave out GPUS (or give 0)")
        sandbox_cpu, sandbox_memory_gb, sandbox_disk_gb = q.cpu, q.memory / 1024.0, q.disk / 1024.0  # MB as plan reads them (MiB)
    measured = input_path.suffix == ".json" and input_path.is_file()  # else a scenario, or refused by optimize
    out = run_optimize(
        load_measure(input_path) if measured else input_path, name=str(input_path) if measured else None,
        passing_per_hour=passing_per_hour, batch=batch, train_s=train_s, max_step_s=max_step_s,
        steps=steps, scale=scale, count=count, seed=seed, backend=backend, workers=workers, gpus=gpu,
        gpus_per_replica=gpus_per_replica, caching=caching, kv_offload_gb=kv_offload_gb, max_replicas=max_replicas,
        max_cap=max_cap, cap_step=cap_step, reps=reps, search_reps=search_reps, screen_holds=screen_holds, pass_rate=pass_rate,
        model_params_b=model_params_b, kv_bytes_per_token=kv_bytes_per_token, sandbox_cpu=sandbox_cpu,
        sandbox_memory_gb=sandbox_memory_gb, sandbox_disk_gb=sandbox_disk_gb, node_type=node_type, progress=_progress(not as_json))
    if write_scenario is not None:
        atomic.write_text(write_scenario, out.scenario_toml)
    _emit(out.model, as_json, output, _renderer("sandbox_fleet.optimize.render", "render_optimize"))


# --- backtest --------------------------------------------------------------------------
@app.command()
@_reads_telemetry
def backtest(
    paths: list[Path] = typer.Argument(..., help="Telemetry with start and finish times (any reader's format)."),
    model: Optional[list[str]] = _MODEL,
    since: Optional[str] = _SINCE,
    until: Optional[str] = _UNTIL,
    split_at: Optional[float] = typer.Option(None, "--split-at", help="Calibrate on the first F of the rollouts in start order, predict the rest (default 0.5; moved to an RL step boundary when steps are detected)."),
    split_by: Optional[str] = typer.Option(None, "--split-by", help="job or model: predict the group that starts last from the others."),
    seeds: int = typer.Option(40, "--seeds", help="Predicted runs per side (each resamples the calibration rows)."),
    seed: int = typer.Option(0, "--seed", help="Base seed: the same seed writes the same bytes."),
    min_rows: int = typer.Option(5, "--min-rows", help="Refuse a split leaving fewer rollouts than this on either side."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout and nothing else."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write the JSON summary to FILE."),
    reader: dict = READER_OPTIONS,
) -> None:
    """How far the simulator is off on your own history, and whether your constants drifted."""
    from sandbox_fleet.backtest import backtest_paths
    from sandbox_fleet.backtest.render import backtest_lines

    _check_outputs(list(paths), o=(output, (".json",)))
    summary = backtest_paths([str(p) for p in paths], split_at=split_at, split_by=split_by, seeds=seeds, seed=seed,
                             min_rows=min_rows, progress=not as_json,
                             read=_read_options(reader), models=model, since=since, until=until)
    _emit(summary, as_json, output, None, lines=backtest_lines)


# --- schema ----------------------------------------------------------------------------
@app.command()
def schema(
    kind: str = typer.Argument(..., help="Output kind: measure, plan, simulate, sweep, checks, optimize or backtest; or input kind: catalog (plan --nodes)."),
) -> None:
    """Print the JSON Schema (draft 2020-12) of one output or input kind, generated from its model."""
    from sandbox_fleet.schemas import schema_text

    sys.stdout.write(schema_text(kind))


# --- demo ------------------------------------------------------------------------------
@app.command()
def demo(
    out: Path = typer.Argument(Path("out"), help="Folder for every output (the corpus is cached inside it)."),
) -> None:
    """Run every stage on the bundled default data (a small synthetic RST campaign)."""
    from sandbox_fleet.demo import main as run

    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder (the demo writes its outputs into a folder)")
    raise typer.Exit(run([str(out)]))


# --- catalog (own prices: check, import) -------------------------------------------------
def _add_catalog() -> None:
    from sandbox_fleet.cli_catalog import catalog_app

    app.add_typer(catalog_app, name="catalog")


_add_catalog()


def _app_for(argv: list[str]) -> typer.Typer:
    """The app to run for ``argv``: when it names a command, an app holding only that command.

    Typer builds every registered command's parameters before parsing; the others cannot change
    what the named one does or prints (its usage line and errors name only itself), so the rest
    of the CLI is not built. Anything else (``--help``, no or an unknown command) gets the whole app.
    """
    from typer.main import get_command_name

    from sandbox_fleet.cli_flags import use_conventions

    _reader_checks_access(app)
    use_conventions(app.registered_commands)
    for sub in app.registered_groups:  # the catalog sub-app's commands follow the same conventions
        if sub.typer_instance is not None:
            use_conventions(sub.typer_instance.registered_commands)
    name = argv[0] if argv else None
    for info in app.registered_commands:
        named = info.name or (get_command_name(info.callback.__name__) if info.callback is not None else None)
        if named == name:
            lean = typer.Typer(**_APP_SETTINGS)
            lean.registered_callback = app.registered_callback
            lean.registered_commands = [info]
            return lean
    for group in app.registered_groups:
        if group.name == name:
            lean = typer.Typer(**_APP_SETTINGS)
            lean.registered_callback = app.registered_callback
            lean.registered_groups = [group]
            return lean
    return app


def _reader_checks_access(typer_app: typer.Typer) -> None:
    """Turn off Typer's ``os.access`` check on every path parameter: the readers open each input and
    an unreadable one is then one line naming it (``main``'s OSError line, exit 2), where Typer's
    check printed a five-line usage box (and, as root, never fired: access() says yes to root)."""
    import inspect

    from typer.models import ParameterInfo

    for info in typer_app.registered_commands:
        if info.callback is not None:
            for p in inspect.signature(info.callback).parameters.values():
                if isinstance(p.default, ParameterInfo):
                    p.default.readable = False


#: Environment defaults while the CLI runs; a variable the user set (even to "") wins.
#: - Pydantic plugins off: the CLI validates only its own models, and looking plugins up reads
#:   every installed package's metadata the first time a model is built (Typer's parameter
#:   adapters included). Set ``PYDANTIC_DISABLE_PLUGINS=""`` to let plugins see the CLI's models.
#: - One OpenBLAS thread: NumPy's OpenBLAS starts a thread per extra core at import, which spins
#:   ~0.1 CPU-s waiting for work that never comes (no command makes a floating-point BLAS call
#:   big enough to thread; measure and sweep parallelise on their own lanes and workers).
CLI_ENV_DEFAULTS = {"PYDANTIC_DISABLE_PLUGINS": "__all__", "OPENBLAS_NUM_THREADS": "1"}


#: Cyclic-GC thresholds while the CLI runs: young objects as often as Python's default (700
#: allocations), the older generations 100x less often. A command builds ~50k long-lived objects
#: while it imports (modules, classes, Pydantic schemas), and the default thresholds scanned them
#: again and again as they aged: 11 middle and one full collection, 30-48 ms of a 0.8 s measure.
#: Short-lived cycles are still freed at the young rate; peak memory at 10M rows is unchanged.
GC_THRESHOLDS = (700, 1000, 10)


@contextmanager
def _cli_environment():
    """``CLI_ENV_DEFAULTS`` set where absent and ``GC_THRESHOLDS`` for the run, both restored after
    (tests run the CLI in-process)."""
    import gc

    added = [name for name in CLI_ENV_DEFAULTS if name not in os.environ]
    for name in added:
        os.environ[name] = CLI_ENV_DEFAULTS[name]
    thresholds = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        for name in added:
            os.environ.pop(name, None)


def main() -> None:
    """Console-script entry point: run the app, turning InputError and OSError into one line + exit 2."""
    try:
        with _cli_environment():
            sys.argv[1:] = _take_quiet(sys.argv[1:])
            _closed_streams()
            _app_for(sys.argv[1:])()
    except InputError as exc:
        _fail(_in_flags(_with_command(exc, sys.argv[1:]), sys.argv[1:]), exc.exit_code)
    except OSError as exc:  # a file the command could not read or write: name it, no traceback
        from sandbox_fleet.atomic import cleanup, reason

        cleanup()
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(f"{where}{reason(exc)}", 2)
    except MemoryError:
        from sandbox_fleet.atomic import cleanup

        cleanup()
        _fail("out of memory: the run needs more memory than this machine has; make it smaller "
              "(fewer rollouts, a smaller grid) or run it on a larger machine", 2)
    finally:  # --quiet holds for this run only: a process that calls main() again starts loud
        _STATE["quiet"] = False


def _closed_streams() -> None:
    """A closed stdout (``>&-``: Python then has no ``sys.stdout``) is one line and exit 2, as ``ls``
    says "write error"; under ``--quiet`` nothing is printed, so it may stay closed. A closed stderr
    leaves errors nowhere to go: they are dropped, the status still says."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # lives as long as the process
    if sys.stdout is None:
        if not _STATE["quiet"]:
            raise InputError("standard output is closed: the command prints its result there "
                             "(redirect it to a file or /dev/null, or pass --quiet with -o)")
        sys.stdout = open(os.devnull, "w", encoding="utf-8")


def _with_command(exc: InputError, argv: list[str]) -> str:
    """``exc``'s line; a table refused for missing columns with a proposed map ends with the command to
    run instead: this one, its ``--map`` replaced by the proposal (``telemetry/suggest_map.py``)."""
    spec = getattr(exc, "spec", None)
    if not spec:
        return str(exc)
    import shlex

    rest, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--map":
            skip = True
        elif not arg.startswith("--map="):
            rest.append(arg)
    return f"{getattr(exc, 'head', exc)}; run: {shlex.join(['sandbox-fleet', *rest, '--map', spec])}"


#: Library parameters whose CLI option has another name than the command's parameter.
_LIBRARY_PARAMS = {"models": "model"}


def _in_flags(message: str, argv: list[str]) -> str:
    """``message`` with each parameter it names in backticks (a library error's convention) shown as
    the flag that sets it in the command ``argv`` runs: `column_map` -> --map. A name the command
    has no flag for stays as it is."""
    if "`" not in message:
        return message
    import re

    from typer.main import get_command

    command = get_command(_app_for(argv))
    for arg in argv[:2]:  # the group's one command; a sub-app's (catalog import) one level down
        command = getattr(command, "commands", {}).get(arg, command)
    flags = {p.name: max(p.opts, key=len) for p in command.params if p.param_type_name == "option" and p.opts}

    def flag(match: re.Match) -> str:
        return flags.get(_LIBRARY_PARAMS.get(match[1], match[1]), match[0])

    return re.sub(r"`([A-Za-z_]\w*)`", flag, message)


def _fail(message: str, code: int) -> None:
    from rich.markup import escape

    from sandbox_fleet.textout import printable

    # one line, whatever the message quotes (a file name with a newline, an escape sequence)
    _console(stderr=True).print(f"[red]error:[/red] {escape(printable(message))}", highlight=False, soft_wrap=True)
    raise SystemExit(code) from None


def console_main() -> None:
    """The process entry point (the ``sandbox-fleet`` script, ``python -m sandbox_fleet.cli``):
    ``main``, then the process ends at once when nothing is left for Python to do at exit."""
    from sandbox_fleet.limits import arrow_pool_for_address_limit

    arrow_pool_for_address_limit()  # before anything imports pyarrow
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    _end_process(code)


def _end_process(code: object) -> None:
    """Exit with ``code`` skipping the interpreter's teardown, which frees every module, class and
    Pydantic schema one object at a time (~70M instructions, 6% of a ``plan``; the OS reclaims the
    memory anyway). Only when the streams flush cleanly and no exit handler or other thread is
    registered (a logging handler, a worker pool): otherwise Python's own exit runs them."""
    import atexit

    threads = sys.modules.get("threading")
    if not isinstance(code, int) or atexit._ncallbacks() or (threads is not None and threads.active_count() > 1):
        raise SystemExit(code)
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # a closed pipe or stream: Python's exit reports it as usual
        raise SystemExit(code) from None
    os._exit(code)


if __name__ == "__main__":
    console_main()
