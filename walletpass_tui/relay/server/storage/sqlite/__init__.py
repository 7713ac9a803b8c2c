"""The relay on one SQLite file, for one relay process: ``schema`` (opening the file),
``database`` (reads and the channel commands), ``writer`` (the one writer thread, group commit)
and ``storage`` (``RelayStorage`` over those)."""
