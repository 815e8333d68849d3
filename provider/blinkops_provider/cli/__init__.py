"""
``blink-schema``: schema migrations from a shell (internal: the command is the interface).

::

    blink-schema pull WS_ID TABLE [-o FILE]       a live table's declaration (JSON), which plans all unchanged
    blink-schema pull WS_ID --all -o FOLDER       every table of the workspace, as FOLDER/<ws_id>/<table>.json
    blink-schema validate PATH...                 the declarations checked offline
    blink-schema plan WS_ID TABLE DECLARATION     what applying it would do (reads only; --folder for a fleet)
    blink-schema locks RECORDS                    the locks held under a records location
    blink-schema unlock RECORDS WS_ID/TABLE ID    release one lock, by its id, left by an apply that is gone

One module per command group: :mod:`~.main` (the arguments, parsed before anything heavy is imported),
:mod:`~.validate` (offline, no Airflow), :mod:`~.pull`, :mod:`~.plan`, :mod:`~.locks`; and what they share:
:mod:`~.connection` (how ``pull`` and ``plan`` reach Blink and say a mistake) and :mod:`~.exit_status`.

One exit status rule for every command (:data:`~.exit_status.EXIT_STATUSES`): 0 done; 1 a mistake or a failure, said
in one line on stderr (a usage mistake too); 2 only from ``plan --detailed-exitcode``, when something would change.
"""
