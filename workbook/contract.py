"""Given code (not a TODO): the error given code raises when a learner's TODO returned a value that
breaks the TODO's contract, before that value does harm further on.

Plain Python, so that a stage's reference module can raise it from its given code without importing
the course runtime. Jupyter and the notebook's demo guard (``autograder.learner.demos``) show it as one line in the notebook's
language that names the TODO to fix (``autograder.learner.faults.result_line``), never as a traceback.
"""
from __future__ import annotations

from autograder.i18n import tr


class ResultError(ValueError):
    """Given code received from TODO ``todo`` a value that breaks its contract.

    Invariant: ``todo`` is a TODO id (``sNN.name``); ``problem`` is ``(english, chinese)``, both
    non-empty, phrased to follow "your TODO n returned ...".

    [zh]
    给定代码从 TODO ``todo`` 收到了一个违反其约定的值。

    不变量：``todo`` 是 TODO 编号（``sNN.name``）；``problem`` 是 ``(英文, 中文)``，两者都不为空，措辞接在
    “你的 TODO n 返回了……”之后。
    """

    def __init__(self, todo: str, en: str, zh: str) -> None:
        if not (en.strip() and zh.strip()):
            raise ValueError(tr("a ResultError says what was wrong in both languages", "ResultError 必须用两种语言说明错在哪里"))
        self.todo, self.problem = todo, (en, zh)
        super().__init__(todo, en)

    def line(self, lang: str | None = None) -> str:
        try:
            from autograder.i18n import L
            from autograder.learner.faults import result_line
        except ImportError:  # without the course runtime: the English line
            return f"your {self.todo} returned {self.problem[0]}"
        return result_line(self.todo, L(*self.problem), lang)

    def __str__(self) -> str:
        return self.line()

    def _render_traceback_(self) -> list[str]:
        # Jupyter shows this line instead of a traceback through the course's code.
        return ["❌ " + self.line()]


def expect(ok: bool, todo: str, en: str, zh: str) -> None:
    """Raise :class:`ResultError` for ``todo`` unless ``ok``."""
    if not ok:
        raise ResultError(todo, en, zh)
