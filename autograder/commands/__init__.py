"""The ``python -m autograder`` command line: the top room; nothing imports it but ``__main__``.
"""
