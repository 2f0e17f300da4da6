"""Grading through other tools: nbgrader, Gradescope and GitHub Classroom, and the class report.
It imports every room below it, not commands.
"""
