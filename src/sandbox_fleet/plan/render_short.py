"""The plan's default text: the decision alone (what to buy, $/h, $/pass, what binds, the top
risks, what it rests on) on one screen, at most ``SCREEN_LINES`` lines at the terminal's width.

Every sentence is the decision block's own (plan/decision.py), so the short text and ``--detail``
never disagree; here they are only fitted: each item folded to a line budget and cut with " ..."
past it, the lists shortened to what fits with a "+N more" line pointing to ``--detail``.
"""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.textout import wrap_line

#: The most lines the default text takes (one screen of a 80x25 terminal).
SCREEN_LINES = 25
#: The pointer to the rest, always the last line.
MORE = "more: plan --detail (every line, its basis, the assumptions); --csv FILE (rows)"
_ELLIPSIS = " ..."


def fit(text: str, width: Optional[int], most: int) -> list[str]:
    """``text`` folded to ``width`` (None: one line), at most ``most`` lines, the last cut at a
    space with " ..." when the rest does not fit."""
    if width is None:
        return [text]
    lines = wrap_line(text, width)
    if len(lines) <= most:
        return lines
    kept = lines[:most]
    last = kept[-1]
    room = width - len(_ELLIPSIS)
    if len(last) > room:
        cut = last.rfind(" ", 0, room + 1)
        last = last[:cut] if cut > len(last) - len(last.lstrip()) else last[:room]
    kept[-1] = last.rstrip() + _ELLIPSIS
    return kept


def _fit_marked(line: str, width: Optional[int]) -> list[str]:
    """``line`` on one line, its "<- chosen" mark kept whole when the rest is cut."""
    mark = "  <- chosen"
    if width is None or not line.endswith(mark) or len(line) <= width:
        return fit(line, width, 1)
    return [fit(line[:-len(mark)], width - len(mark), 1)[0] + mark]


def is_buy(line: str) -> bool:
    """Whether ``line`` starts a BUY item."""
    return line.lstrip().startswith(("BUY ", "or BUY "))


def buy_marks(lines: list[str]) -> list[bool]:
    """Which of ``lines`` a terminal emphasises: each BUY line and its folded continuation lines
    (those right after it, indented deeper)."""
    marks, indent = [], None
    for line in lines:
        depth = len(line) - len(line.lstrip())
        if is_buy(line):
            indent = depth
        elif indent is not None and not (line.strip() and depth > indent):
            indent = None
        marks.append(indent is not None)
    return marks


def short_lines(p: PlanSummary, *, previous: PlanSummary | None = None, risks: Optional[list[str]] = None,
                width: Optional[int] = None, previous_name: str = "the previous plan") -> list[str]:
    """The decision as at most ``SCREEN_LINES`` lines of ``width`` columns (None: lines left whole)."""
    from sandbox_fleet.plan.decision import decide
    from sandbox_fleet.plan.render import censored_lines

    d = decide(p, previous, risks)
    t = p.target
    head = fit(f"PURCHASE ORDER: sandbox fleet for {t.concurrency:,} concurrent sandboxes ({t.source})", width, 1)
    cap = censored_lines(t.censored, t.tolerance)[:3] if t.censored is not None else []  # its basis: --detail

    def decision(most: int) -> list[str]:
        # the cap and the demand it hid (the choice between them is the decision), what to buy, $, binds
        out = [x for line in cap for x in _fit_marked(line, width)]
        for line in [*d.buy, *d.cost]:
            out += fit(f"  {line}", width, most)
        return out + fit(f"  {d.binds}", width, 1)

    fixed = decision(2)
    if len(head) + len(fixed) + 1 > SCREEN_LINES:  # many GPU pools: one line an item
        fixed = decision(1)
    if len(head) + len(fixed) + 1 > SCREEN_LINES:  # still too many: the rest is counted, as a list's is
        keep = SCREEN_LINES - len(head) - 2
        fixed = fixed[:keep] + [f"  +{len(fixed) - keep} more lines: plan --detail"]
    room = SCREEN_LINES - len(head) - len(fixed) - 1  # the last line: MORE
    risk_title = "  top risks (failing check gates):" if d.risks else "  top risks: no check gate fails"
    risk = _block(risk_title, d.risks, width, min(room, 1 + _MOST_RISKS)) if risks is not None else []
    room -= len(risk)
    change = (_block(f"  changed since {previous_name}:", d.changed, width, min(room - 2, 1 + _MOST_CHANGES))
              if previous is not None else [])
    # the simulator's measured error (plan --backtest) first: the order rests on that simulator
    rested = ([f"{p.backtest.line} (backtest {p.backtest.path})"] if p.backtest is not None else []) + d.rests_on
    rests = _block("  rests on:", rested, width, room - len(change))
    return head + fixed + risk + rests + change + fit(MORE, width, 1)


#: Items a list shows before its "+N more" line (the rest of the screen goes to what the order rests on):
#: the risks are check's top three failing gates and its "and N more" line (report/decision.py).
_MOST_RISKS = 4
_MOST_CHANGES = 3


def _block(title: str, items: list[str], width: Optional[int], room: int) -> list[str]:
    """``title`` and its ``items`` as "    - item" lines, one line each, in at most ``room`` lines:
    the items that do not fit counted on a "+N more" line; nothing when not even the title fits."""
    if room <= 0:
        return []
    head = fit(title, width, 1)
    room -= 1
    lines = [fit(f"    - {x}", width, 1)[0] for x in items]
    if len(lines) <= room:
        return head + lines
    keep = max(room - 1, 0)
    return head + lines[:keep] + [f"    +{len(lines) - keep} more lines: plan --detail"]
