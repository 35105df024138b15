"""Known-wrong answers per notebook: each module ``ch<notebook>.py`` defines

    WRONG_ANSWERS = {"<exercise name>": [("<source of a wrong answer>", "<substring of the hint it must get>"), ...]}

tests/test_exercise_registry.py runs every one of them (and each exercise's notebook solution and stub).

Optional: ``CASES = {"<case name>": ("<exercise>", "<source>", "<hint>")}`` to give the cases readable test ids
(build WRONG_ANSWERS from it), and ``EXACT_HINTS = True`` to require the message to equal the hint instead of
containing it.

Optional: ``RIGHT_ANSWERS = {"<exercise name>": [("<source of another right answer>", "<how it differs>"), ...]}``:
other correct ways than the notebook's solution (another tie-break, another loop order); each must be graded
correct.
"""
