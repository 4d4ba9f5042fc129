"""What a repair must never carry to a user, whatever the retrieved chunks hold.

Repairs are built from retrieved text, and retrieved text is not curated for end users: a chunk can hold an
API key, a password or a token that a config page happened to contain, or a line planted to steer a model
("ignore previous instructions", "reveal your system prompt"). A repair that copies such text delivers it
with the guard's approval. `unsafe_reasons` names what is wrong with a text (empty when nothing is);
grounding_rewrite never picks such a sentence, and the healer refuses any repair that still has one.

Every pattern is linear: no nested quantifiers, bounded repetitions.
"""

from __future__ import annotations

import re

from stream_guard.text import regex_cache

# Credentials by their published shapes, and "password: ..." style assignments.
_SECRET_RE = regex_cache.compile(
    r"""
    \b(?:sk|pk|rk)[-_](?:live|test|proj)?[-_]?[A-Za-z0-9]{16,}       # Stripe / OpenAI style keys
    |\bAKIA[0-9A-Z]{16}\b                                             # AWS access key id
    |\bgh[pousr]_[A-Za-z0-9]{30,}                                     # GitHub tokens
    |\bxox[abposr]-[A-Za-z0-9-]{10,}                                  # Slack tokens
    |\bAIza[0-9A-Za-z_-]{30,}                                         # Google API keys
    |\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}  # JSON web tokens
    |-----BEGIN[ A-Z]{0,20}PRIVATE\ KEY-----                          # PEM private keys
    |\b(?:password|passwd|pwd|passphrase|secret|api[\s_-]?key|access[\s_-]?key|auth[\s_-]?token|
         access[\s_-]?token|bearer|client[\s_-]?secret|private[\s_-]?key|token)
      \b["']?\s{0,3}[:=]\s{0,3}["']?[^\s"',;]{6,}          # password: hunter22, api_key=...
    |\b[A-Fa-f0-9]{40,}\b                                             # long hex secrets
    """,
    re.IGNORECASE | re.VERBOSE,
)

# Text addressed to a model rather than to a reader.
_INSTRUCTION_RE = regex_cache.compile(
    r"""
    \b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|preceding)
        \s+(?:instructions?|prompts?|messages?|rules?|context)
    |\bsystem\s+prompt\b
    |\b(?:you\s+are\s+now|from\s+now\s+on\s+you|act\s+as\s+(?:an?\s+)?(?:ai|assistant|dan|jailbroken))\b
    |\b(?:do\s+not|don't|never)\s+(?:tell|reveal\s+to|inform)\s+the\s+user\b
    |\bnew\s+instructions?\s*:
    |<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>
    |\[/?INST\]|<<SYS>>
    |^[^\S\n]*+(?:system|assistant)\s*+:   # blanks before it read once, within its line: a run of blank lines
                                              # read from each of its starts cost quadratic time
    """,
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)


# Most texts hold none of the literals either pattern needs, and a regex of many alternatives is tried at every
# position of the text (none starts with a literal that the engine could scan for), so an ASCII text is first
# tested for them with substring searches, done in C. Each test below is implied by a branch of the pattern it
# guards (case-folded: in ASCII text IGNORECASE means lower()); a text that passes one is read by the pattern
# itself. Non-ASCII text always is: IGNORECASE also matches "ſ" for "s", "K" (Kelvin) for "k" and "ı" for "i",
# which lower() does not fold. tests/stream_guard/heal/test_delivery_safety.py checks both against the patterns.
_SECRET_WORDS = ("passw", "passphrase", "pwd", "secret", "key", "token", "bearer")  # the assignment branch's
_HEX_RUN_RE = regex_cache.compile(r"[0-9a-f]{40}")  # the long-hex branch, on lowered text


def _may_hold_secret(low: str) -> bool:
    return (
        "k-" in low or "k_" in low  # sk- pk- rk- keys
        or "akia" in low or "xox" in low or "aiza" in low or "eyj" in low or "-----" in low
        or ("gh" in low and "_" in low)  # ghp_ and the other GitHub prefixes
        or (("=" in low or ":" in low) and any(word in low for word in _SECRET_WORDS))
        or _HEX_RUN_RE.search(low) is not None
    )


_INSTRUCTION_WORDS = ("ignore", "disregard", "forget", "override", "system", "assistant", "user", "instruction",
                      "act", "<|", "inst]", "<<sys>>")


def _may_address_a_model(low: str) -> bool:
    return any(word in low for word in _INSTRUCTION_WORDS) or ("now" in low and "you" in low)


def has_secret(text: str) -> bool:
    if text.isascii() and not _may_hold_secret(text.lower()):
        return False
    return _SECRET_RE.search(text) is not None


def is_instruction_like(text: str) -> bool:
    if text.isascii() and not _may_address_a_model(text.lower()):
        return False
    return _INSTRUCTION_RE.search(text) is not None


def unsafe_reasons(text: str) -> tuple[str, ...]:
    """Why `text` must not be delivered as (part of) a repair; empty when it may."""
    reasons = []
    if has_secret(text):
        reasons.append("it contains a credential or secret")
    if is_instruction_like(text):
        reasons.append("it contains text addressed to a model (instructions, a system prompt)")
    return tuple(reasons)
