"""Grading in the parent: staging, supervising children, trusted expected outcomes, verdicts, keeping the
grader's secrets out of reports, and the reports themselves. It imports core, child and isolation.
"""
