"""The writer locks this process holds now, {lock path: token}: the table layer's lock
(table/lock.py) records them, and the Connect filesystem (connect_fs) fences the writes it
sends with them."""
from typing import Dict

HELD: Dict[str, str] = {}
