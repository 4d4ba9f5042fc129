"""Text analysis the checks share: pure, cached where it pays.

    words.py        tokens, stems, stop words and negators
    sentences.py    where a text splits into sentences
    questions.py    question keys (the hash drift history and partitions follow)
    claims.py       an answer's claims
    spans.py        where each sentence sits, for repairs
    markup.py       answer formats: markdown and citation markers apart from the claim text, mapped back
    ner.py          named entities (spaCy, or the regex fallback)
    regex_cache.py  fixed patterns compiled once per Python version, kept on disk between runs
    quantities/     numbers, units and money, durations and ranges, and how two quantities compare
    records.py      structured chunks (JSON, key-value tables) read as fields and a prose view
    schedule.py     clock times, days of the week and time zones
    frequency.py    how often (twice daily, every 6 hours) as events per day
    modality.py     obligations, permissions and prohibitions, and the action each governs
    exceptions.py   what a sentence excepts from or includes in its scope
    names.py        well-known equivalent names (U.S. / United States, MA / Massachusetts, Rd / Road)
    fingerprint.py  an answer's fingerprint for drift
    analysis.py     a context's analysis (sentences, stems, index, values), once per distinct context: bounded LRU
    inspection.py   Inspection: one event's question, context and answer, analysed once
"""
