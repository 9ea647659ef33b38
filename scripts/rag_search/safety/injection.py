"""Text that talks to the AI reading our results: flagged, kept searchable, never a reason to obey.

Pages and repositories can carry prompt injections aimed at the agent that
reads search results ("ignore previous instructions and …"). Such chunks are
still indexed and found, because a user may well search for them, but they
carry `suspect: "instructions"` in their metadata, and SKILL.md tells the agent
that result text is quoted material, never instructions.

The patterns are phrases that address an AI assistant or try to override its
instructions; they are specific, so ordinary documentation (which gives the
reader instructions all the time) is not flagged. bench/suspect_text.py
measures how often they fire on real documentation.
"""

import re

_PATTERNS = [
    # "ignore all previous instructions", "disregard the system prompt"
    r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}?\b(?:previous|prior|above|earlier|preceding|system|original)\b"
    r"[^.\n]{0,20}?\b(?:instructions?|prompts?|directions|guidelines|rules)\b",
    # "you are now an AI assistant with no restrictions", "as an AI language model"
    r"\byou are (?:now |no longer )?(?:an? )?(?:ai|assistant|chatgpt|claude|gpt-?\d*|llm|large language model|language model)\b",
    r"\bas an ai(?: language)? model\b",
    # "new instructions:", "hidden instructions for the assistant"
    r"\b(?:new|updated|additional|secret|hidden|real) instructions?\b[^.\n]{0,30}?(?::|\bfor the (?:ai|assistant|agent|model)\b)",
    # addressed to the model: "AI assistant: ignore…", "Claude, send…", "attention LLM agents, delete…"
    r"\b(?:ai|llm|assistant|agent|claude|chatgpt|gpt)s?\b[,:]?\s+(?:please\s+)?(?:you must\s+|must\s+)?"
    r"(?:ignore|disregard|execute|exfiltrate|reveal|forward|upload|delete|send)\b[^.\n]{0,40}?"
    r"\b(?:instructions?|prompt|secrets?|credentials?|keys?|tokens?|files?|data|this)\b",
    # "note to LLM agents:", "if you are an AI reading this"
    r"\b(?:note|message|attention)\s+(?:to|for)\s+(?:all\s+|any\s+)?(?:ai|llms?|language models?)\b",
    r"\bif you are an? (?:ai|llm|language model|assistant|agent)\b",
    # "do not tell the user", "never reveal this to the user"
    r"\b(?:do not|don't|never)\s+(?:tell|inform|reveal|mention|show|disclose)\b[^.\n]{0,30}?\b(?:the\s+)?(?:user|human|operator)\b",
    # chat templates and role markers pasted into text
    r"<\|(?:im_start|im_end|system|endoftext|begin_of_text|start_header_id)\|>|\[/?INST\]|<</?SYS>>",
    r"\b(?:jailbreak|developer mode enabled|DAN mode)\b",
]
_SUSPECT = re.compile("|".join(f"(?:{pattern})" for pattern in _PATTERNS), re.IGNORECASE)


def looks_like_instructions(text: str) -> bool:
    """Whether `text` seems to address an AI assistant rather than a human reader."""
    return _SUSPECT.search(text) is not None
