"""What runs inside a grading child, and the one protocol it speaks to the grader: the sandbox's entry,
probes, hybrid implementations and disabled twins. It imports only :mod:`autograder.core`.
"""
