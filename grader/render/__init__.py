"""Stage 6: one pure function per format of the report (json, text, markdown, html), from the
report dict to text; ``visible.student_view`` decides what a student may see under hidden tests.
The registry of every format, the platforms' included, is ``grader.platforms.FORMATS``."""
