"""The pure event loop, the admission kernel's oracle (issue 36): ``loop.run_events`` with
``loop_state`` (the fleet's state), ``admission`` (the pure queues), ``pool`` + ``cache`` (the
inference replicas: processor sharing, the LRU prefix cache), ``driver`` (turn-by-turn glue) and ``trainer``
(``RLState``: the trainer's release and step), ``limits_pass`` (``[fleet.limits]`` where nothing feeds back).
No production path runs it; ``tests/test_imports.py`` checks that production code never imports ``tests``."""
