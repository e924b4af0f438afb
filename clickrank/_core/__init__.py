"""The shared private core of clickrank: what every package may import.

Validation and errors (``_validation``), file I/O with ownership (``_io``), sizes
(``_budget``), signals, threads, parameters, counter-based random streams
(``_random``), segments, model files, progress, figures and the result base class
(``_result``). It imports nothing of clickrank outside itself. Its modules are private
to clickrank, but not to one package: any package of clickrank may import them
(``tests/test_private_imports.py``).
"""
