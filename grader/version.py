"""The grader's version (part of every report and of batch's up-to-date key)."""

__version__ = "0.1.0"
