"""Every sentence the checker and the grader say to a learner, in both languages (one catalog).

Each entry is an :class:`autograder.i18n.L` with ``str.format`` fields. Code that reports to a
learner formats an entry in the notebook's language; it never builds learner-facing text inline.
"""
from __future__ import annotations

from autograder.i18n import L

NOT_IMPLEMENTED = L("{label} is not implemented yet", "{label} 还没有实现")
NOT_IMPLEMENTED_DO = L("replace `raise NotImplementedError()` with your code, then re-run that cell",
                       "把 `raise NotImplementedError()` 换成你的代码，然后重新运行那个单元")
NEEDS = L("{label} needs {other}, which is not implemented yet", "{label} 依赖 {other}，而它还没有实现")
NEEDS_DO = L("finish TODO {n} first", "先完成 TODO {n}")
DEPENDS = L("this check depends on {other} ({title}), which is still failing: fix that first",
            "这个检查依赖 {other}（{title}），而它还没通过：先把它修好")
CHECK_FAILED = L("check '{name}' failed", "检查 '{name}' 未通过")
DEPENDS_UNSEEN = L("this check passes when the course's code stands in for your other TODOs, so the bug is in "
                   "one it calls, {other} ({title}), in a case its visible checks do not cover: fix that first",
                   "换成课程自带的其它 TODO 实现后这个检查就通过了，所以问题出在它调用的 {other}（{title}）里，"
                   "而且是那个 TODO 的可见检查没覆盖到的情况：先把它修好")
HIDDEN_FAILED = L("hidden check '{name}' failed", "隐藏检查 '{name}' 未通过")
QUIZ_WRONG = L("{q}: not correct yet", "{q}：还不对")
INPUT = L("input:   ", "输入：  ")
EXPECTED = L("expected:", "期望：  ")
GOT = L("got:     ", "实际：  ")
WHERE = L("where:   ", "差异：  ")
HINT = L("hint:    ", "提示：  ")
HELPER_OUTSIDE = L("note:     only the cells with TODOs are graded; define your helpers inside them",
                   "注意：   只有含 TODO 的单元会被评分；请把辅助函数定义在这些单元里")
NAME_OUTSIDE = L("{label} uses `{name}`, which is defined outside the graded cells: grading will not see it "
                 "(move it into a cell with a TODO)",
                 "{label} 用到了 `{name}`，它定义在不评分的单元里：评分时看不到它（把它移到含 TODO 的单元里）")
COURSE_VERSION_USED = L("{label}: your cell has no `{name}` (renamed or deleted?); grading uses the course's",
                        "{label}：你的单元里没有 `{name}`（改名或删掉了？）；评分时使用课程自带的版本")
REPORT_HEAD = L("{label} · {title}: {n}/{total} {kind} passed", "{label} · {title}：{total} 个{kind}中通过了 {n} 个")
VISIBLE = L("visible checks", "可见检查")
HIDDEN = L("hidden checks", "隐藏检查")
VISIBLE_ONLY = L("(visible checks only: grading also runs hidden checks)", "（这里只运行了可见检查：评分时还会运行隐藏检查）")
NO_HIDDEN_HERE = L("ℹ️  {label}: hidden checks are not part of this copy of the course; they run when your notebook is graded.",
                   "ℹ️  {label}：这份课程副本不含隐藏检查；提交评分时才会运行。")
FINISH_TO_SEE = L("⏳ finish {label} to see this", "⏳ 完成 {label} 后才能看到这里的结果")
TIMEOUT = L("took longer than {s} s (an endless loop?)", "运行超过 {s} 秒（死循环？）")
ALL_PASSED = L("all {n} checks passed ({h} hidden)", "全部 {n} 个检查通过（其中 {h} 个隐藏）")
