"""Widgets: thin views over the experiments. A widget holds no logic a test
cannot reach: its buttons call experiment functions, and its displays read
their result objects. Each runs headless too: `button.click()` then `wait()`."""
