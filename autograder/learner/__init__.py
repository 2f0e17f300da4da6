"""What a learner's notebook calls: ``check()``, ``demo()``, hints, predictions, progress, the first cell's
runtime, plots and fonts. It imports core, child, isolation and grading (``check()`` judges as grading does).
"""
