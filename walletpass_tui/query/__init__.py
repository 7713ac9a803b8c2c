"""Field queries over the delivery history: ask the stored bodies about their fields.

* ``language.py``  the query language of the dashboard's filter and ``--where`` (words,
  ``topic:``/``verdict:``/``source:``, ``data.platform:google``, ``data.balance>10``,
  ``has:``/``-has:``, groups with OR), bounded, parsed into a tree (``tree.py``: its nodes,
  written back; ``path_reading.py``: a field path as the language writes it);
* ``values.py``    a body's values by path, read by the schema learner's rules;
* ``index.py``     the field index (``<history>-fields``): values by path and row;
  ``indexer.py`` keeps it up to date on a thread of its own;
* ``condition.py`` a tree as the store's ``RowCondition``: SQL over the index, and the same test in
  memory;
* ``filters.py``   text -> ``LogFilter`` (the columns the store filters on, plus the condition).
"""
