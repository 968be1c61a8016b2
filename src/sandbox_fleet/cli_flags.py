"""The CLI's one flag vocabulary: help panels, plain metavars, renamed flags and switch values.

- Every option of every command sits in one of ``PANELS`` (``--help`` groups them): the panel is
  looked up by the option's long name in ``PANEL_OF``, so a name means the same thing everywhere
  (``--model`` filters telemetry wherever it appears; ``--gpu`` names an inference GPU type).
- Metavars are plain words (``PATH``, ``TEXT``, ``FLOAT``, ``INTEGER``), a switch shows none:
  Typer's ``<bool>`` invited ``--json true``.
- A renamed flag keeps its old name for a release (``RENAMED``): the old name is rewritten to the
  new one before parsing, with one notice on stderr, and is not listed in ``--help``.
- A switch followed by what reads as its value (``check x.json --json true``) is refused naming
  the switch, where the word would otherwise be taken as an input path.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from sandbox_fleet.errors import InputError

#: The help panels, in the order ``--help`` shows them.
PANELS = ("Input", "Telemetry", "Sizing", "Prices", "Inference", "Run", "Output")

_INPUT = ("--tasks", "--cache-dir", "--plan", "--simulate", "--optimize", "--backtest", "--previous", "--thresholds",
          "--from", "--budgets", "--preset", "--allow-mismatch", "--replay", "--reclaim-trace")
_TELEMETRY = ("--format", "--map", "--time-unit", "--assume-tz", "--reward-key", "--score", "--latest-time",
              "--allow-any-time", "--min-turn-rows", "--group-size", "--model", "--since", "--until",
              "--pass-threshold", "--cap", "--split-at", "--split-by", "--min-rows")
_SIZING = ("--concurrency", "--batch", "--train-s", "--passing-per-hour", "--tolerance", "--groups-per-batch",
           "--signal-confidence", "--keep-cap", "--node-type", "--reserve-cpu", "--reserve-memory-gb",
           "--reserve-disk-gb", "--node-provision-s", "--node-scale-down-s", "--node-placement", "--request",
           "--shape", "--max-wait-s", "--max-step-s", "--steps", "--max-cap", "--cap-step", "--pass-rate",
           "--scale", "--count", "--vary", "--target", "--within", "--within-abs", "--knee-over", "--goal",
           "--max-variants", "--metric", "--reserved-nodes", "--burst-nodes", "--burst-tier")
_PRICES = ("--nodes", "--price-tier", "--providers", "--rent-provider", "--substrates", "--gpu-usd-h",
           "--gpu-catalog", "--volume-gb", "--volume-usd-per-gb-h", "--location", "--lease", "--purchase",
           "--reclaim-per-node-h")
_INFERENCE = ("--prefix-break", "--turns", "--gpu-prefill-tok-s", "--gpu-decode-tok-s", "--gpu-tflops",
              "--gpu-hbm-tbs", "--model-params-b", "--kv-bytes-per-token", "--roofline-utilisation",
              "--bytes-per-param", "--decode-batch", "--context-tokens", "--gpu", "--gpu-memory-gb",
              "--gpu-memory-fraction", "--gpu-target-utilisation", "--max-tp", "--kv-offload-gb", "--trainer-gpus",
              "--gpus-per-replica", "--caching", "--max-replicas", "--inference", "--reference-decode-tok-s",
              "--replica-decode-tok-s", "--replica-prefill-tok-s")
_RUN = ("--seed", "--seeds", "--backend", "--workers", "--reps", "--search-reps", "--screen-holds",
        "--max-memory-gb", "--timing", "--out-of-core", "--memory-budget-gb")
_OUTPUT = ("--json", "--output", "--detail", "--csv", "--emit-harbor", "--emit-k8s", "--force", "--k8s-name",
           "--k8s-namespace", "--k8s-node-class", "--k8s-runtime-class", "--k8s-cluster", "--k8s-ami-alias",
           "--k8s-provision-s", "--k8s-image", "--strict", "--metrics-out", "--prometheus-rules", "--serving-rules",
           "--title", "--write-scenario", "--telemetry", "--suggest-map", "--grafana-dashboard")
#: The filters every command that reads telemetry takes (one option each, declared once in cli.py): which
#: rollouts it keeps, as ``measure`` keeps them. ``--pass-threshold`` goes with them where a pass rate is measured.
TELEMETRY_FILTERS = ("--model", "--since", "--until")
#: Long option name -> its panel (one meaning per name, whichever command takes it).
PANEL_OF: dict[str, str] = {name: panel for panel, names in zip(
    PANELS, (_INPUT, _TELEMETRY, _SIZING, _PRICES, _INFERENCE, _RUN, _OUTPUT)) for name in names}

#: Old flag -> (command, new flag): accepted for one release with a notice, hidden from --help.
RENAMED: dict[str, tuple[str, str]] = {
    "--utilisation": ("plan", "--roofline-utilisation"),
    "--gpu-utilisation": ("plan", "--gpu-target-utilisation"),
}
#: Options kept hidden for a release because their meaning moved into another flag: name -> the flag to use.
SUPERSEDED: dict[str, str] = {
    "--sandbox-cpu": "--request CPUS,MEMORY_MB,STORAGE_MB",
    "--sandbox-memory-gb": "--request CPUS,MEMORY_MB,STORAGE_MB",
    "--sandbox-disk-gb": "--request CPUS,MEMORY_MB,STORAGE_MB",
}

#: Words a switch given a value would be followed by (Click's boolean spellings).
_SWITCH_VALUES = {"true", "false", "yes", "no", "on", "off", "1", "0", "y", "n", "t", "f"}
#: Typer's type label -> the plain metavar shown instead.
_PLAIN = {"str": "TEXT", "Path": "PATH", "path": "PATH", "file": "FILE", "directory": "DIR", "float": "FLOAT",
          "int": "INTEGER"}


_ORDER = {name: i for i, name in enumerate(PANELS)}


def _plain_help(p: Any, panel: str) -> None:
    """``p``'s panel (an option's) and plain metavar (an option's or argument's)."""
    if isinstance(p, TyperOption):
        p.rich_help_panel = panel
    if isinstance(p, (TyperOption, TyperArgument)):
        # an instance attribute: shadows the class's method for this parameter only
        def shown(ctx: Any, _p: Any = p) -> str | None:
            return plain_metavar(_p, ctx)

        p.display_type_rich = shown  # type: ignore[method-assign]


def long_name(param: Any) -> str:
    """The option's longest name (``--output`` for ``-o/--output``); an argument's own name."""
    return max(param.opts, key=len) if param.opts else str(param.name)


def plain_metavar(param: Any, ctx: Any) -> str | None:
    """The metavar ``--help`` shows: none for a switch, else Typer's type in plain words (``<list[str]>``
    -> ``TEXT``: a repeatable option says so in its help)."""
    if isinstance(param, TyperOption) and (param.is_flag or param.count):
        return None
    label = type(param).display_type(param, ctx) if hasattr(type(param), "display_type") else None
    label = (label or "").strip("<>")
    while label.startswith("list[") and label.endswith("]"):
        label = label[len("list["):-1]
    return _PLAIN.get(label, label.upper() or None)


class FlagCommand(TyperCommand):
    """A Typer command with the conventions above: panels and plain metavars in ``--help``, renamed
    flags rewritten (with a notice), a switch given a value refused naming the switch."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for p in self.params:
            _plain_help(p, PANEL_OF.get(long_name(p), "Options"))
        # --help lists the panels in PANELS' order (arguments first, in their own order)
        self.params.sort(key=lambda p: -1 if isinstance(p, TyperArgument) else _ORDER.get(getattr(p, "rich_help_panel", ""), len(PANELS)))

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        help_option = self.get_help_option(ctx)
        if help_option is not None:
            _plain_help(help_option, "Output")
        return params

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self._refuse_switch_values(self._renamed(list(args))))

    def _renamed(self, args: list[str]) -> list[str]:
        out: list[str] = []
        ended = False
        for a in args:
            if not ended and a == "--":
                ended = True
            name, eq, value = a.partition("=")
            if not ended and name in RENAMED and RENAMED[name][0] == self.name:
                new = RENAMED[name][1]
                notice(f"{name} is now {new}; the old name works until the next release")
                a = new + eq + value
            elif not ended and name in SUPERSEDED and any(name in p.opts for p in self.params):
                notice(f"{name} is deprecated: use {SUPERSEDED[name]} (the old flag works until the next release)")
            out.append(a)
        return out

    def _refuse_switch_values(self, args: list[str]) -> list[str]:
        switches = {o for p in self.params if isinstance(p, TyperOption) and p.is_flag for o in p.opts}
        takes_paths = any(isinstance(p, TyperArgument) for p in self.params)
        for i, a in enumerate(args[:-1]):
            if a == "--":
                break
            nxt = args[i + 1]
            if a in switches and takes_paths and nxt.lower() in _SWITCH_VALUES and not Path(nxt).exists():
                raise InputError(f"{a} is a switch and takes no value: {nxt!r} after it would be read as an input; "
                                 f"write {a} alone to turn it on (leave it out for off)")
        return args


class FlagGroup(TyperGroup):
    """The root command: its own options (``--version``, ``--quiet``...) with plain metavars too."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        for p in params:
            _plain_help(p, "Options")
        return params


def notice(message: str) -> None:
    """One line on stderr (``note: ...``), even under ``--quiet``: it is about the command line itself."""
    sys.stderr.write(f"note: {message}\n")


def use_conventions(commands: list[Any]) -> None:
    """Give every registered command (Typer ``CommandInfo``) the ``FlagCommand`` class, unless it
    names its own (Typer records ``TyperCommand`` when a command names none)."""
    for info in commands:
        if info.cls in (None, TyperCommand):
            info.cls = FlagCommand
