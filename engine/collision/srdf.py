"""SRDF ``<disable_collisions link1=".." link2=".." reason=".."/>``: the link pairs never checked."""
from __future__ import annotations

import xml.etree.ElementTree as ET


def disabled_pairs(source):
    """The (link1, link2) pairs an SRDF disables, from a file path or the XML text, in file order.
    Raises ValueError naming the file and the element when the XML is broken or a pair is
    incomplete."""
    text = str(source)
    where = "SRDF text"
    if not text.lstrip().startswith("<"):
        where = text
        try:
            with open(text, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ValueError(f"SRDF {where}: cannot be read ({e.strerror})") from None
    try:
        root = ET.fromstring(text)
    except ET.ParseError as e:
        raise ValueError(f"{where}: not valid XML ({e})") from None
    if root.tag != "robot":
        raise ValueError(f"{where}: the root element is <{root.tag}>, expected <robot>")
    pairs = []
    for k, el in enumerate(root.iter("disable_collisions")):
        a, b = el.get("link1"), el.get("link2")
        if not a or not b:
            raise ValueError(f"{where}: <disable_collisions> number {k + 1} lacks link1 or link2 "
                             f"({ET.tostring(el, encoding='unicode').strip()})")
        pairs.append((a, b))
    return pairs
