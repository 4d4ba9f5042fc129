"""The seed's five production scenarios as AnswerEvents, shared by detector, pipeline and CLI tests."""

from stream_guard.wire.events import AnswerEvent, Chunk

RETURN_POLICY = AnswerEvent(
    event_id="scenario-1",
    question="What is the return policy?",
    context=(Chunk("policy", "Our return policy allows returns within 14 days of purchase. Items must be unused."),),
    answer="You can definitely return items within 30 days of purchase.",
)
FABRICATED_CITATION = AnswerEvent(
    event_id="scenario-2",
    question="Who published the seminal work on transformer NER?",
    context=(Chunk("1", "Recent studies show transformer models achieve 94% accuracy on NER tasks."),),
    answer="The seminal work was published by Dr. James Harrison and Dr. Wei Liu in arXiv:2204.09876, "
    "at DeepMind Research Institute.",
)
BILLING = AnswerEvent(
    event_id="scenario-3",
    question="How much does the Pro plan cost?",
    context=(Chunk("pricing", "The Pro plan costs $120 per year, billed annually."),),
    answer="The Pro plan costs $10 per month, billed monthly. You can cancel your monthly subscription at any time.",
)
PRICE_QUESTION = "What is the price of the SKU-441 widget?"
PRICE_CONTEXT = (Chunk("catalog", "The SKU-441 widget is priced at $49.99."),)
PRICE_STABLE = "The SKU-441 widget is priced at $49.99."
PRICE_DRIFTED = "The SKU-441 widget costs $39.99."
CLEAN = AnswerEvent(
    event_id="scenario-5",
    question="How long is the warranty?",
    context=(Chunk("warranty", "The warranty covers manufacturing defects for two years from the date of delivery."),),
    answer="The warranty covers manufacturing defects for two years from the date of delivery.",
)


def price_event(event_id: str, answer: str) -> AnswerEvent:
    return AnswerEvent(event_id=event_id, question=PRICE_QUESTION, context=PRICE_CONTEXT, answer=answer)
