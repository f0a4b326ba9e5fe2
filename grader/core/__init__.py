"""The pure core of the pipeline: arrays in, findings and points out. No processes, no files
beyond the assignment folders read through ``grader.registry``, no student code.

probes -> (the sandbox runs them) -> compare -> diagnose (+ evidence) -> concepts -> scoring ->
report. ``tasks`` holds what is numeric and specific to each task; ``assignments`` joins a task
with an assignment's interface.
"""
