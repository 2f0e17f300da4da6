"""How much of what learner code produced one report may carry: the feedback budget and level.

A grading child holds what learners must not read (the other TODOs' reference code, the hidden
checks), and learner code runs there, so everything a report shows that came from the child (a
value it returned, an exception's type and message, a cell error, a "missing" reason, the name of a
given function it used) is a channel out of the sandbox. :mod:`autograder.grading.leaks` withholds text
that carries a secret in any encoding it knows; this module bounds what any other encoding could
carry, whatever it is:

* every learner-derived piece a report shows passes :meth:`Disclosure.take`, which charges its
  UTF-8 size to one budget per submission (:data:`BUDGET_BYTES` for all its TODOs, checks and
  messages together; a piece shown before again is free: it tells nothing new), withholds it when
  it leaks, and cuts it when the budget is spent;
* values are rendered short (:mod:`autograder.grading.display`'s ``compact``: type and shape plus a short
  prefix, long numbers and keys cut);
* the failing checks of a TODO show the learner's value in the order the report names them (the
  most specific first: :func:`autograder.grading.verdict.lead_first`), so the budget pays for the
  failure that leads before the others, and a failure that does not lead shows its value only while
  :data:`LEAD_RESERVE_BYTES` stay for the leads of later TODOs (:meth:`Disclosure.take_sparing`); a
  hidden check never shows one;
* what the grader says about the child itself is chosen from the grader's own few words: an exit
  status without its number, a cell number only among the cells sent, a signal only when it
  explains something;
* a line in the grader's own words that shows only because the child said so (a given member the
  course supplied, which rule of the channel it broke, where and why it stopped) passes
  :meth:`Disclosure.charge`: it is charged in full every time it is shown (whether it shows carries
  information even when its words are the grader's), and left out once the budget cannot pay for it.

The level (``[grading] feedback`` in ``course.toml``, :data:`FEEDBACK_LEVELS`) says what a failed
hidden check shows: ``"values"`` (the default) the same as any failure, within the budget;
``"titles"`` only the check's name, title and hint, and nothing the child said about it.

Invariants: the pieces in :attr:`Disclosure.shown` are exactly the learner-derived text the report
shows, and none of them leaks by :meth:`autograder.grading.leaks.LeakGuard.leaks`; their UTF-8 sizes
and those of the lines :meth:`Disclosure.charge` let show sum to :attr:`Disclosure.used`, at most
:attr:`Disclosure.limit`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from autograder.core.safetext import one_line
from autograder.grading.leaks import WITHHELD, LeakGuard

BUDGET_BYTES = 400        # learner-derived UTF-8 bytes one submission's report may show, all TODOs together
# What a failing check that does not lead its TODO leaves of the budget: its value shows only while
# this much stays for the leading failures of the TODOs after it (a lead is worth more than a second value).
LEAD_RESERVE_BYTES = BUDGET_BYTES // 2
FEEDBACK_LEVELS = ("values", "titles")
SPENT = "‹…›"             # what stands for learner text once the budget is spent


@dataclass
class Disclosure:
    """The learner-derived text one submission's report shows (see the module's invariants).

    ``withhold``: show none at all (a submission whose pieces leak only together).
    """

    guard: LeakGuard
    level: str = "values"
    limit: int = BUDGET_BYTES
    withhold: bool = False
    shown: list[str] = field(default_factory=list)
    used: int = 0

    def __post_init__(self) -> None:
        if self.level not in FEEDBACK_LEVELS:
            raise ValueError(f"feedback level must be one of {FEEDBACK_LEVELS}, not {self.level!r}")

    @property
    def titles_only(self) -> bool:
        """Whether a failed hidden check shows only its name, title and hint."""
        return self.level == "titles"

    def take(self, piece: str) -> str:
        """``piece``, rendered from what the child sent, as the report may show it: on one line, or
        withheld, or cut where the budget ends (the cut text is what is charged)."""
        if not piece:
            return piece
        piece = one_line(piece[:self.limit + 1])  # a character is at least a byte: nothing past this could show
        if self.withhold or self.guard.leaks(piece):
            return WITHHELD
        if piece in self.shown:
            return piece  # the same words again (every TODO's "missing" reason, say): nothing new is shown
        left = self.limit - self.used
        size = len(piece.encode("utf-8"))
        if size > left:
            piece = _cut(piece, left - len(SPENT.encode("utf-8")))
            if not piece:
                return SPENT
            if self.guard.leaks(piece):
                return WITHHELD
            size = len(piece.encode("utf-8"))
            piece += SPENT
        self.used += size
        self.shown.append(piece.removesuffix(SPENT))
        return piece


    def take_sparing(self, piece: str, keep: int = LEAD_RESERVE_BYTES) -> str:
        """:meth:`take`, for a piece that may go unshown: "" (nothing shown, nothing charged) unless the
        whole piece fits and still leaves ``keep`` bytes of the budget (a piece shown before is free)."""
        if not piece:
            return piece
        line = one_line(piece[:self.limit + 1])
        if line not in self.shown and len(line.encode("utf-8")) > self.limit - self.used - keep:
            return ""
        return self.take(piece)

    def charge(self, piece: str) -> bool:
        """Whether a line that shows because the child said so may show, ``piece`` being what it tells
        (the grader's own words: never cut, never withheld as a leak, never free when repeated, and not
        one of :attr:`shown`, which is learner text). Its UTF-8 size is charged when it may; when
        withholding, or once the budget cannot pay for all of it, it may not and nothing is charged."""
        size = len(piece.encode("utf-8"))
        if self.withhold or size > self.limit - self.used:
            return False
        self.used += size
        return True


def _cut(text: str, size: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 form fits in ``size`` bytes."""
    if size <= 0:
        return ""
    return text.encode("utf-8")[:size].decode("utf-8", "ignore")


def unlimited(guard: LeakGuard, level: str = "values") -> Disclosure:
    """A disclosure for one TODO graded on its own (before its submission's budget is applied)."""
    return Disclosure(guard, level, limit=1 << 30)
