"""The data owner's side: the store and its files, registration, engines and connections,
budget groups and where the ledger lives."""
