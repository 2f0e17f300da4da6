"""Every sentence the checker and the grader say to a learner, in both languages (one catalog).

Each entry is an :class:`autograder.core.i18n.L` with ``str.format`` fields. Code that reports to a
learner formats an entry in the notebook's language; it never builds learner-facing text inline.
"""
from __future__ import annotations

from autograder.core.i18n import L

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
HIDDEN_TITLE_ONLY = L("hidden check '{name}' failed: {title}", "隐藏检查 '{name}' 未通过：{title}")
ALSO_FAILING = L("also failing: {titles}", "同时未通过：{titles}")
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

# -- demos, predictions and plots that run on a learner's code (autograder.learner.demos, autograder.learner.faults) --
DEMO_FIX_FIRST = L("⏸ this cell runs your {label}, whose checks do not pass yet: fix it (run check(\"{id}\")), "
                   "then run this cell again",
                   "⏸ 这个单元要运行你的 {label}，而它的检查还没有全部通过：先把它修好（运行 check(\"{id}\")），"
                   "再重新运行这个单元")
DEMO_STOPPED_IN = L("❌ this cell stopped inside your {label} ({error}); its visible checks pass, so this is a case "
                    "they do not cover: fix {label}, then run this cell again",
                    "❌ 这个单元停在了你的 {label} 里面（{error}）；它的可见检查都通过了，说明这是检查没覆盖到的情况："
                    "修好 {label}，再重新运行这个单元")
DEMO_STOPPED = L("❌ this cell stopped in the course's code ({error}) on a value from your {labels}; their visible "
                 "checks pass, so this is a case they do not cover: look at what they return here",
                 "❌ 这个单元停在了课程给定的代码里（{error}），起因是你的 {labels} 返回的值；它们的可见检查都通过了，"
                 "说明这是检查没覆盖到的情况：看看它们在这里返回了什么")
DEMO_NAME_MISSING = L("❌ this cell uses `{name}`, which this notebook has not defined: run the cell above that "
                      "defines it (or put it back if it was deleted or renamed), then run this cell again; no TODO "
                      "is at fault",
                      "❌ 这个单元用到了 `{name}`，可这个笔记本里还没有定义它：先运行上面定义它的那个单元（如果被删掉或改了名，"
                      "就把它恢复），再重新运行这个单元；这不是哪个 TODO 的问题")
DEMO_OUT_OF_MEMORY = L("more than {gb} GB of memory", "内存超过 {gb} GB")
DEMO_TOO_LONG = L("more than {s} s", "运行超过 {s} 秒")
BAD_RESULT = L("your {label} returned {problem}: fix it (check(\"{id}\") and hint(\"{id}\") help), then run "
               "this cell again",
               "你的 {label} 返回了{problem}：先把它修好（check(\"{id}\") 和 hint(\"{id}\") 能帮上忙），"
               "再重新运行这个单元")
TIMEOUT = L("used more than {s} s of CPU time (an endless loop?)", "CPU 时间用了 {s} 秒以上（死循环？）")
TIMEOUT_WALL = L("still running after {s} s on the clock, having used {cpu:.1f} s of CPU time; the machine's load "
                 "average was {load:.1f} on {cores} cores",
                 "过了 {s} 秒（按时钟）还没结束，只用了 {cpu:.1f} 秒 CPU 时间；这台机器的平均负载是 {load:.1f}，"
                 "共 {cores} 个核")
#: what TIMEOUT_WALL's numbers say, by whether the machine had CPU to spare (load below its cores)
TIMEOUT_WALL_BUSY = L(" (a busy machine: other work had the CPU; run it again when the machine is quieter)",
                      "（机器很忙：CPU 被别的任务占着；等机器空一些再运行一次）")
TIMEOUT_WALL_IDLE = L(" (the machine had CPU to spare, so this code was waiting: sleep, input() or a lock?)",
                      "（机器有空闲的 CPU，所以这段代码是在等待：sleep、input() 还是锁？）")
TIMEOUT_CLOCK = L("took longer than {s} s (an endless loop?)", "运行超过 {s} 秒（死循环？）")
NOT_RUN_AFTER_TIMEOUT = L("{k} more check(s) not run: a check above ran out of time, and grading stops there too",
                          "还有 {k} 项检查没有运行：上面有一项超时了，评分时也会在那里停下")
ALL_PASSED = L("all {n} checks passed ({h} hidden)", "全部 {n} 个检查通过（其中 {h} 个隐藏）")

# -- when the grading process stops early (autograder.grading.supervise, autograder.grading.grade) -----------------
STOP_TOO_LARGE = L("the results were too large", "结果太大了")
STOP_TAMPERED = L("the result channel was tampered with", "结果通道被篡改了")
STOP_WAITED = L("stopped after {s} s of waiting (sleeping or blocked forever?)",
                "等待 {s} 秒后被停止（在 sleep，或者永远阻塞了？）")
STOP_SIGNAL = L("the grading process was ended by {sig}", "评分进程被 {sig} 终止")
STOP_SIGNAL_WHY = L("the grading process was ended by {sig} ({why})", "评分进程被 {sig} 终止（{why}）")
WHY_XCPU = L("more than {s} s of CPU time: an endless loop, or far too slow?", "CPU 时间超过 {s} 秒：死循环，还是太慢了？")
WHY_KILL = L("killed: memory or time limit", "被杀掉了：超出内存或时间限制")
WHY_XFSZ = L("output file limit", "超出输出文件大小限制")
WHY_SEGV = L("crashed (a very deep recursion?)", "崩溃了（递归太深？）")
# no exit code and no signal number: learner code chooses them, and a report is not a channel
STOP_EXIT = L("your code ended the grading process (sys.exit, os._exit or a crash)",
              "你的代码结束了评分进程（sys.exit、os._exit 或崩溃）")
STOP_SIGNAL_OTHER = L("the grading process was ended by a signal", "评分进程被信号终止")
STOP_WHERE = L("{what} during {where}", "{what}，发生在{where}")
WHERE_CHECK = L("check '{name}'", "检查 '{name}'")
WHERE_HIDDEN_CHECK = L("hidden check '{name}'", "隐藏检查 '{name}'")
WHERE_SETUP_CELL = L("setup cell {n}", "准备单元 {n}")
WHERE_TODO_CELL = L("your TODO cell {n}", "你的第 {n} 个 TODO 单元")
WHERE_BEFORE = L("before the checks started", "检查开始之前")
SAME_FOR_EVERY = L("{message} (the same for every TODO of this notebook)", "{message}（这个 notebook 的每个 TODO 都一样）")
NOT_RUN = L("not run", "未运行")
TAMPERING = L("tampering: the grading process's result channel received {what} (the TODO earns nothing)",
              "篡改：评分进程的结果通道收到了 {what}（这个 TODO 不得分）")
# -- the grading protocol's broken rules, each the {what} of TAMPERING (autograder.child.protocol): each names
# the broken rule in the grader's words; the only field, {name}, is the name of one of the TODO's own checks --
PROTOCOL_NOT_AN_EVENT = L("a line that is not a grading event", "一行不是评分事件的数据")
PROTOCOL_TOO_MUCH = L("a line holding more than the grading harness ever sends",
                      "一行超出评分框架发送上限的数据")
PROTOCOL_PARTIAL_LINE = L("a partial line at the end of the channel", "通道末尾一行不完整的数据")
PROTOCOL_AFTER_DONE = L("lines after 'done'", "`done` 之后的数据")
PROTOCOL_AFTER_MISSING = L("events after 'missing'", "`missing` 之后的事件")
PROTOCOL_READY_TWICE = L("'ready' twice", "两次 `ready`")
PROTOCOL_BEFORE_READY = L("an event before 'ready'", "`ready` 之前的事件")
PROTOCOL_CELL_AFTER_CELLS = L("a cell started after the cells finished", "所有单元结束后才开始的单元")
PROTOCOL_CELL_OUT_OF_TURN = L("a cell out of turn", "没按顺序开始的单元")
PROTOCOL_CELLS_NOT_ALL_STARTED = L("the cells reported finished before every cell started",
                                   "还有单元没开始就发来的「单元全部结束」")
PROTOCOL_CELL_ERRORS_OUT_OF_TURN = L("cell errors out of turn", "时机不对的单元错误报告")
PROTOCOL_CELL_ERRORS_NOT_RUN = L("cell errors for cells that did not run", "针对没运行过的单元的错误报告")
PROTOCOL_CELLS_DONE_TWICE = L("'cells_done' twice", "两次 `cells_done`")
PROTOCOL_MISSING_OUT_OF_TURN = L("'missing' out of turn", "时机不对的 `missing`")
PROTOCOL_COURSE_VERSIONS_OUT_OF_TURN = L("'course_versions' out of turn", "时机不对的 `course_versions`")
PROTOCOL_NO_SUCH_CHECK = L("a check that does not exist", "一个不存在的检查")
PROTOCOL_STARTED_TWICE = L("check '{name}' started twice", "开始了两次的检查 '{name}'")
PROTOCOL_CHECK_BEFORE_CELLS = L("a check before the cells finished", "单元还没全部结束就开始的检查")
PROTOCOL_REPORTED_TWICE = L("check '{name}' reported twice", "报告了两次结果的检查 '{name}'")
PROTOCOL_OUTCOME_NO_SUCH_CHECK = L("an outcome for a check that does not exist", "一个不存在的检查的结果")
PROTOCOL_OUTCOME_NOT_RUNNING = L("an outcome for check '{name}', which was not running",
                                 "检查 '{name}' 的结果，而它当时并没有在运行")
PROTOCOL_DONE_BEFORE_CELLS = L("'done' before the cells finished", "单元还没全部结束就发来的 `done`")
PROTOCOL_NOTHING_REPORTED = L("check '{name}' reported nothing before the next event",
                              "下一个事件，而检查 '{name}' 还没报告结果")
NO_RESULTS = L("no check results arrived (did your code write to the grader's result channel?)",
               "没有收到任何检查结果（你的代码是不是往评分器的结果通道里写了东西？）")
GRADER_ERROR = L("grader error: {error}", "评分器错误：{error}")

# -- the grader's report (autograder.grading.reports, autograder.integrations.gradescope, autograder.isolation.levels) ----------
REPORT_ISOLATION = L("isolation: {level}", "隔离级别：{level}")
REPORT_GRADING_UNDER = L("grading under isolation: {level}", "评分使用的隔离级别：{level}")
REPORT_GRADED_UNDER = L("Graded under isolation: {level}", "评分时的隔离级别：{level}")
REPORT_ROW = L("{name}  (stage {stage})  score {score}/{total}", "{name}  （阶段 {stage}）  得分 {score}/{total}")
REPORT_NOT_GRADED = L("{name}: NOT GRADED — {error}", "{name}：未评分 — {error}")
REPORT_WARNING = L("warning: {w}", "警告：{w}")
REPORT_HIDDEN_CHECKS = L("hidden checks", "隐藏检查")
ISO_ROOT_CHILD = L("child as uid 0 without capabilities", "子进程以无特权能力的 uid 0 运行")
ISO_OWN_USER = L("each child as an unprivileged user of its own", "每个子进程各用一个独立的非特权用户")
ISO_NO_SECCOMP = L("no seccomp: children of one run can pass bits to each other through file locks",
                   "没有 seccomp：同一次评分的子进程之间可以借文件锁互相传递信息")
CHECK_NAMED = L("{title} ({name})", "{title}（{name}）")
# -- a learner's own grading report (python -m autograder grade --format learner; GitHub Classroom) ----
LEARNER_ISOLATION = L("graded under isolation: {level}", "评分时的隔离级别：{level}")
TODO_UNGRADED = L("this TODO could not be graded", "这个 TODO 无法评分")
CELL_ERROR_NOTE = L(" (note: {error})", "（注意：{error}）")
SETUP_CELL_RAISED = L("setup cell {cell} raised {error}", "准备单元 {cell} 抛出了 {error}")
YOUR_CELL_RAISED = L("your cell {cell} raised {error}", "你的第 {cell} 个单元抛出了 {error}")
UNREADABLE_RESULT = L("the result your code produced could not be read", "读不出你的代码产生的结果")
LEARNER_HEAD = L("{name} (stage {stage}): {score}/{total} points", "{name}（阶段 {stage}）：{score}/{total} 分")
LEARNER_TODO = L("{mark} TODO {n} · {id} · {title}: {points}/{max} points",
                 "{mark} TODO {n} · {id} · {title}：{points}/{max} 分")
LEARNER_NOT_GRADED = L("{name}: your notebook could not be graded: {error}", "{name}：你的 notebook 无法评分：{error}")
LEARNER_WARNING = L("note: {warning}", "注意：{warning}")
LEARNER_STEP_NEEDS = L("this step earns its points when {id} earns at least {need:g} of its {max:g} points",
                       "{id} 至少拿到 {max:g} 分中的 {need:g} 分，这一步才得分")
# -- submissions refused before anything is graded (autograder.grading.submission) --
SUBMISSION_IS_LINK = L("{name} is a link ({kind}), not a notebook file: hand in the notebook itself (in Jupyter: "
                       "File > Save, then upload or push that file)",
                       "{name} 是一个链接（{kind}），不是 notebook 文件：请提交 notebook 文件本身（在 Jupyter 里"
                       "「文件 > 保存」，再上传或推送这个文件）")
LINK_SYMBOLIC = L("a symbolic link", "符号链接")
LINK_HARD = L("a hard link to one of the course's own files", "指向课程自身文件的硬链接")
SUBMISSION_IN_COURSE = L("{name} lies in the course's own files (reached through the link {link}), not in the "
                         "submission: hand in your own notebook",
                         "{name} 位于课程自身的文件里（经由链接 {link} 到达），不在提交的内容里：请提交你自己的 notebook")
SUBMISSION_SAME_FILE = L("{name} is the same file as {other}, reached through a link: it is graded once, as {other}",
                         "{name} 和 {other} 是同一个文件（经由链接到达）：只按 {other} 评分一次")
SUBMISSION_OTHER_STAGE = L("{name} is the notebook of stage {found} ({found_name}), but this assignment grades "
                           "stage {wanted} ({wanted_name}): hand in your {wanted_name} notebook",
                           "{name} 是阶段 {found}（{found_name}）的 notebook，而这份作业评的是阶段 {wanted}"
                           "（{wanted_name}）：请提交你的 {wanted_name} notebook")
# -- a Gradescope submission as a whole (autograder.integrations.gradescope) --
GRADESCOPE_NO_NOTEBOOK = L("No .ipynb notebook was found in your submission: upload {released}.",
                "你的提交里没有 .ipynb notebook：请上传 {released}。")
GRADESCOPE_SEVERAL = L("Your submission holds several notebooks and none is named {released} ({found}): upload {released}, or "
            "only that one.",
            "你的提交里有好几个 notebook，但没有一个叫 {released}（{found}）：请上传 {released}，或者只上传那一个。")
GRADESCOPE_THE_ONLY_ONE = L("Graded {name}, the only notebook in your submission (this assignment's notebook is {released}).",
                 "已评分 {name}：它是你提交里唯一的 notebook（这份作业的 notebook 叫 {released}）。")
GRADESCOPE_NOT_ISOLATED = L("Not graded: the autograder cannot isolate submissions on this machine; your instructor has to fix "
                 "its set-up.", "未评分：自动评分程序在这台机器上无法隔离提交的代码；需要由老师修好它的配置。")


LEARNER_NO_SUCH_FILE = L("{name} was not found: keep the notebook's name as it was handed out, and push it",
                         "没有找到 {name}：请保留 notebook 发下来时的文件名，并把它推送上来")
# -- a package a stage grades without (Stage.not_preloaded): check() and the report say the same --
STAGE_WITHOUT_PACKAGE = L("stage {n} is graded without {package}: a grading process loads native libraries such as "
                          "{package} only before your code runs, so an `import {package}` in your TODO cells fails "
                          "when it runs during grading; solve this stage without {package}",
                          "第 {n} 阶段评分时不加载 {package}：评分进程只在运行你的代码之前加载 {package} 这类原生库，"
                          "所以 TODO 单元里的 `import {package}` 一旦在评分时执行就会失败；这一阶段请不用 {package} 完成")

# -- appended for issue 44: a line the child's word decides is charged to the report's budget ---------
TAMPERING_UNSAID = L("tampering: the grading process's result channel broke the grading protocol (the TODO earns nothing)",
                     "篡改：评分进程的结果通道违反了评分协议（这个 TODO 不得分）")
STOPPED_UNSAID = L("stopped before it finished (this report already shows all it may of what your code chose to do)",
                   "没有运行完就停止了（这份报告里由你的代码决定的内容已经显示到上限）")
