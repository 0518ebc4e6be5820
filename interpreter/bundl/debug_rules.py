"""The rule names of Appendix A.3 (for the debugger's `break RULE` completion)."""

RULES = (
    "S-Program", "S-Split-Left", "S-Split-Left-Done", "S-Split-Right",
    "S-Split-Right-Done", "S-Split-None", "S-Destruct-Block", "S-Destruct-Grid",
    "S-Destruct-Done", "S-Group", "S-Group-Done", "S-Sync-Wait-Done", "S-Sync-Wait-Spin",
    "S-Sync-Dec", "S-Sync-Init-Zero", "S-Sync-Init-Nonzero", "S-Async-Partition-Congr",
    "S-Async-Partition-Unwind", "S-Async-Partition-Done", "S-Async-Memcpy", "S-Memcpy",
    "S-Decl", "S-Free", "S-Alloc-Local", "S-Alloc-Shared", "S-Alloc-Global", "S-Assn",
    "S-Arr-Assn", "S-Partition", "S-Claim", "S-Lower", "S-If-True", "S-If-False",
    "S-While", "S-Seq-First", "S-Seq-Done", "S-Function-Call",
)
