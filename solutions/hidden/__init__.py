"""The package the hidden checks are imported from: ``solutions.hidden.sNN``.

Their files are each stage folder's ``hidden.py`` and ``hidden.toml`` (served under this name by
:class:`autograder.core.layout.StageModules`); a grader's copy without stage folders holds them here,
as ``sNN.py`` and ``sNN.toml``.
"""
