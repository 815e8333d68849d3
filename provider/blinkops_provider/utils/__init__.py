"""
What the provider's layers share, at the bottom: internal, not part of the public API (``docs/api.rst``).

- :mod:`~.blink_api`: the facts of Blink's API the client follows (its path, its header, its transient statuses, its
  largest page and body);
- :mod:`~.inputs`: every argument's check, where it enters; :mod:`~.names`: how a Blink, a workspace and a table are
  named; :mod:`~.text`: how a name or a value is shown to a person;
- :mod:`~.raising`: the input errors, raised without importing Airflow;
- :mod:`~.states`: the words of outcomes and actions; :mod:`~.statuses`: how each HTTP status is answered;
- :mod:`~.storage`: where records, locks and snapshots are kept.
"""
