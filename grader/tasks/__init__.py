"""One module per task, each defining ``TASK`` (``grader.core.tasks.Task``): the task's probes,
its conceptual checks, its evidence fields, how its outputs are read, the words for its own
stages and what a course's interface cannot take. ``grader.core.tasks.tasks()`` finds them;
no other module knows a task by its name."""
