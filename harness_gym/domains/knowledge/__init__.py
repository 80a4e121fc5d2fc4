"""Knowledge work: cited, typed records about fictional entities from conflicting, dated sources."""
