"""Writes tests/data/loops_quality.json: the labelled quality set of agent.loops' similar_call.

Run `.venv/bin/python tests/data/build_loops_quality.py` after editing; the JSON is committed and
is what the test reads. Each execution is a realistic telemetry sequence (llm_call events with
tool_call / checkpoint events between them and timestamps) and the similar_call clusters a
human expects: a cluster is a set of llm_calls of one model that are the agent asking the same
thing again (a retry with a counter or timestamp, a "try again" reformulation, a paraphrased
re-ask). Negatives are sequences that are not loops even though they share words: different
questions in a row, RAG steps that each bring new context, bulk jobs of one template over
different items. The labels say what *should* happen, not what the detector does: the cases the
lexical vectorizer gets wrong stay in the set and are reported in docs/skills/loops.md.

The prompts were written by hand for this set (no real user data).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

OUT = Path(__file__).with_name("loops_quality.json")
T0 = datetime(2026, 3, 12, 9, 14, 3, 512000, tzinfo=UTC)

GPT = "gpt-4o-2024-08-06"
MINI = "gpt-4o-mini"
CLAUDE = "claude-3-5-sonnet-20241022"
LLAMA = "llama-3.1-70b-instruct"


class Execution:
    def __init__(self, ident: str, kind: str, note: str) -> None:
        self.ident, self.kind, self.note = ident, kind, note
        self.events: list[dict[str, Any]] = []
        self.clusters: dict[str, list[int]] = {}
        self.clock = T0

    def tick(self, seconds: float) -> str:
        self.clock += timedelta(seconds=seconds)
        return self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def llm(self, model: str, message: str, cluster: str | None = None,
            seconds: float = 2.5) -> None:
        if cluster is not None:
            self.clusters.setdefault(cluster, []).append(len(self.events))
        self.events.append({"type": "llm_call", "timestamp": self.tick(seconds), "model": model,
                            "user_message": message})

    def tool(self, name: str, seconds: float = 0.8, **fields: Any) -> None:
        self.events.append({"type": "tool_call", "timestamp": self.tick(seconds), "name": name,
                            **fields})

    def checkpoint(self, name: str, **state: Any) -> None:
        self.events.append({"type": "checkpoint", "timestamp": self.tick(0.01), "name": name,
                            "metadata": state})

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.ident, "kind": self.kind, "note": self.note,
                "input": {"events": self.events},
                "expected": {"similar_call": sorted(self.clusters.values())}}


SETS: list[Execution] = []


def execution(ident: str, kind: str, note: str) -> Execution:
    ex = Execution(ident, kind, note)
    SETS.append(ex)
    return ex


# ============================================================================================
# Positives: the agent asks the same thing again
# ============================================================================================

ex = execution("retry-attempt-counter", "retry",
               "invoice extraction retried with an attempt counter")
for attempt in range(1, 5):
    ex.tool("read_pdf", path="s3://bucket/invoices/inv-2291.pdf")
    ex.llm(GPT, "Extract the invoice number, the invoice date, the total amount due and the "
                "currency from the invoice text below. Answer as JSON with the keys "
                "invoice_number, date, total, currency.\n\nINVOICE TEXT:\nNorthwind Traders Ltd, "
                "14 Harbour Road, Leeds. Invoice INV-2291 dated 03/02/2026. 3 x Office chair "
                "ergonomic @ 189.00 = 567.00; 2 x Standing desk @ 420.00 = 840.00. Subtotal "
                "1,407.00 VAT 20% 281.40 Total due GBP 1,688.40. Payment within 30 days.\n\n"
                f"Attempt {attempt} of 5.", "loop")
    ex.tool("validate_json", outcome="error: missing key total")

ex = execution("retry-timestamp-prefix", "retry", "status poll with a timestamp prefix")
for i in range(5):
    stamp = (T0 + timedelta(seconds=37 * i + 3)).isoformat(timespec="milliseconds")
    ex.llm(MINI, f"[{stamp}] Check the deployment status of service payments-api in "
                 "us-east-1 using the kubectl output below and report whether all pods are "
                 "healthy.\n\nkubectl output: payments-api-7d9f8b6c5-x2kq9 0/1 "
                 "CrashLoopBackOff restarts=" + str(4 + i), "loop", seconds=37)
    ex.tool("kubectl_get_pods", namespace="payments")

ex = execution("retry-uuid-trace-id", "retry", "ticket classification with a fresh trace id")
for trace in ("3f1c9a2e-8b4d-4e6f-9a1b-2c3d4e5f6a7b", "a7e2c410-1f3b-47d9-b8e5-0c9d2a6f4e13",
              "0d4b7f9c-6a21-4c8e-91f3-5e2b8a7c6d90"):
    ex.llm(GPT, f"trace_id={trace}\nClassify this support ticket into exactly one of: billing, "
                "technical, account, other. Reply with the category only.\n\nTicket: \"I was "
                "charged twice for my Pro subscription this month and I need one of the charges "
                "refunded. My account email is the one I'm writing from.\"", "loop")
    ex.tool("post_classification", outcome="error: 502 Bad Gateway")

ex = execution("try-again-summary", "reformulation", "'try again' reformulations of a summary")
report = ("Summarize the Q3 operations report below in exactly three bullet points for the "
          "executive team.\n\nReport: Q3 revenue grew 12% quarter over quarter, driven by the "
          "EMEA enterprise segment. Gross margin fell two points because of higher cloud "
          "hosting costs after the migration. Customer churn was flat at 2.1%. Hiring slowed; "
          "we closed 14 of 30 planned roles. The new billing system launched two weeks late "
          "but without incidents.")
ex.llm(CLAUDE, report, "loop")
ex.tool("check_format", outcome="error: 5 bullets")
ex.llm(CLAUDE, "That did not follow the format. Please try again. " + report, "loop")
ex.tool("check_format", outcome="error: 4 bullets")
ex.llm(CLAUDE, "Try again, and this time use exactly three bullet points. " + report, "loop")
ex.tool("check_format", outcome="error: 4 bullets")
ex.llm(CLAUDE, "Still wrong: you must answer with three bullets, no more. " + report, "loop")

ex = execution("paraphrased-reask-policy", "paraphrase",
               "the same policy question re-asked three ways")
context = ("\n\nPolicy excerpt: Orders shipped to Canada can be returned within 30 days of "
           "delivery. Return shipping is paid by the customer unless the item arrived damaged. "
           "Refunds are issued to the original payment method within 10 business days of "
           "receiving the return.")
ex.llm(GPT, "What is the refund policy for orders shipped to Canada?" + context, "loop")
ex.tool("search_kb", query="refund canada")
ex.llm(GPT, "Can you tell me what the refund policy is for orders that were shipped to Canada?"
       + context, "loop")
ex.tool("search_kb", query="canada returns")
ex.llm(GPT, "Please explain the refund policy that applies to orders shipped to Canada."
       + context, "loop")

ex = execution("sql-error-feedback", "retry",
               "SQL agent fed back a slightly different error each time")
errors = ["column \"usr_id\" does not exist", "column \"user_ident\" does not exist",
          "column \"uid\" does not exist", "column \"users.userid\" does not exist"]
schema = ("Tables: users(id, email, created_at, status), sessions(id, user_id, started_at, "
          "ended_at). Write a PostgreSQL query that counts the distinct active users per day "
          "for the last 30 days, where active means having at least one session that day.")
for err in errors:
    ex.llm(GPT, f"{schema}\nYour previous query failed with: ERROR: {err}. Return only the "
                "corrected SQL.", "loop")
    ex.tool("run_sql", outcome="error")

ex = execution("json-parse-retry", "retry", "invalid JSON fed back with a parse position")
for pos in (142, 97, 151):
    ex.llm(MINI, "Return ONLY valid JSON with the keys name, email, company and role for this "
                 "contact card, and nothing else.\n\nContact: Maria Gonzalez, Head of "
                 "Procurement at Lindqvist & Berg AB, maria.gonzalez@lindqvist-berg.se, "
                 f"+46 8 555 0134.\n\nYour last response was not valid JSON (Expecting ',' "
                 f"delimiter: line 1 column {pos}).", "loop")
    ex.tool("json_parse", outcome="error")

ex = execution("browser-button-missing", "retry", "browsing agent stuck on a missing button")
for ref, y in (("ad_93812", 640), ("ad_10277", 1280), ("ad_55120", 1920)):
    ex.tool("browser_screenshot", url="https://shop.example.com/p/48213")
    ex.llm(CLAUDE, "You are controlling a web browser to buy the item the user asked for. "
                   f"Current URL: https://shop.example.com/p/48213?ref={ref}. Scroll position: "
                   f"{y}px. Visible elements: product title 'Trailblazer 2 Hiking Boots', price "
                   "'$129.99', size selector, reviews tab. The 'Add to cart' button was not "
                   "found on the page. What should the next browser action be? Reply with one "
                   "action.", "loop")
    ex.tool("browser_scroll", outcome="ok")

ex = execution("search-no-results", "retry", "search agent rewording a query that keeps failing")
for query in ("acme corp annual revenue 2023", "acme corporation revenue 2023",
              "acme corp 2023 annual revenue report", "acme corp revenue fiscal 2023"):
    ex.tool("web_search", outcome="0 results")
    ex.llm(LLAMA, f"The web search for \"{query}\" returned no results. You are researching "
                  "the annual revenue of Acme Corp for the fiscal year 2023 for a competitor "
                  "analysis. Suggest a better search query and explain briefly why it should "
                  "work.", "loop")

ex = execution("long-prompt-clock", "retry", "long agent prompt whose clock line drifts")
preamble = ("You are OpsBot, an assistant for the on-call engineer of the payments platform. "
            "You can call these tools: get_metrics(service, window), get_logs(service, query), "
            "page_human(reason). Follow the runbook: first confirm the alert with metrics, "
            "then look for the root cause in the logs, then propose a mitigation. Never "
            "restart databases without a human. Keep answers under 120 words.\n\n")
for minute in (1, 3, 6, 9, 14):
    ex.llm(GPT, preamble + f"Current time: 2026-03-12 10:{minute:02d}:22 UTC. Active alert: "
                "p99 latency of checkout-api above 2s for 5 minutes. Last tool result: "
                "get_metrics timed out. What do you do next?", "loop", seconds=60)
    ex.tool("get_metrics", outcome="error: timeout")

ex = execution("two-models-retrying", "retry",
               "the same retry loop on a primary and a fallback model")
msg = ("Translate the following customer message into English and keep the original tone: "
       "\"Bonjour, ma commande n°{n} n'est toujours pas arrivée et le suivi n'a pas bougé depuis "
       "une semaine. Pouvez-vous vérifier ?\" (request {r})")
for r in range(3):
    ex.llm(GPT, msg.format(n=48213, r=r + 1), "gpt")
    ex.tool("deliver", outcome="error: 503")
for r in range(3):
    ex.llm(CLAUDE, msg.format(n=48213, r=r + 4), "claude")
    ex.tool("deliver", outcome="error: 503")

ex = execution("two-interleaved-loops", "retry", "two independent tasks retried in alternation")
for i in range(3):
    ex.llm(GPT, f"Attempt {i + 1}: write a haiku about autumn leaves falling on a quiet "
                "temple courtyard, in English, with the classic 5-7-5 syllable pattern.", "haiku")
    ex.tool("count_syllables", outcome="error")
    ex.llm(GPT, f"Attempt {i + 1}: generate a strong password policy for a bank's internal "
                "admin portal: minimum length, character classes, rotation, reuse and lockout "
                "rules.", "policy")
    ex.tool("lint_policy", outcome="error")

ex = execution("german-retry", "retry", "German prompt retried with a counter (non-ASCII)")
for n in range(1, 4):
    ex.llm(MINI, "Fasse die folgende Beschwerde in zwei Sätzen zusammen und schlage eine "
                 "höfliche Antwort vor: „Die Lieferung war zwei Wochen zu spät, die Verpackung "
                 "war beschädigt und der Kundendienst hat auf meine drei E-Mails nicht "
                 f"geantwortet.“ (Versuch {n}/3)", "loop")
    ex.tool("send_reply", outcome="Fehler: Zeitüberschreitung")

ex = execution("japanese-retry", "retry", "Japanese prompt retried with a timestamp (no spaces)")
for sec in (5, 41, 77):
    ex.llm(GPT, f"【2026-03-12 18:{sec // 60:02d}:{sec % 60:02d} JST】次の問い合わせを要約して、"
                "担当部署（請求、技術、アカウント）を一つ選んでください。問い合わせ：「先月の請求額が"
                "二重に引き落とされています。至急返金してください。」", "loop")
    ex.tool("route_ticket", outcome="エラー")

ex = execution("chained-drift", "retry", "a prompt that accumulates failure notes, chaining")
base = ("Book a table for 4 people at an Italian restaurant near Union Square, San Francisco, "
        "tonight at 7pm. Use the reservations tool and confirm the booking reference.")
notes: list[str] = []
for place in ("Trattoria Contadina", "Sotto Mare", "Piperade", "Barbacco"):
    ex.llm(CLAUDE, base + ("\nAlready tried: " + "; ".join(notes) if notes else ""), "loop")
    ex.tool("reserve_table", outcome="fully booked")
    notes.append(f"{place} (fully booked)")

ex = execution("identical-plus-drift", "retry", "two identical calls then two with a counter")
q = ("Generate the weekly status email for the Atlas project from these notes: migration 80% "
     "done, two blockers on the auth service, demo moved to Thursday.")
ex.llm(MINI, q, "loop")
ex.llm(MINI, q, "loop")
ex.llm(MINI, q + " (retry 2)", "loop")
ex.llm(MINI, q + " (retry 3)", "loop")

ex = execution("planner-step-counter", "retry", "planner re-planning with a step counter")
for step in (7, 8, 9, 10):
    ex.checkpoint("plan", step=step)
    ex.llm(GPT, f"You are at step {step} of the plan. Goal: find a direct flight from Lisbon to "
                "Boston on 14 May for under 600 EUR. Last action: search_flights returned an "
                "empty list. Decide the next action and reply with a JSON tool call.", "loop")
    ex.tool("search_flights", outcome="[]")

ex = execution("rate-limit-backoff", "retry", "retries after a 429 with a growing wait")
paragraph = ("Our new return policy lets customers send back unused items within 60 days, "
             "free of charge, from any of our stores or by post.")
for wait in (2, 4, 8, 16):
    ex.llm(CLAUDE, f"Rate limited (HTTP 429). Waited {wait}s. Retry: translate the following "
                   f"paragraph into Spanish for the website footer: {paragraph}", "loop",
           seconds=wait)

ex = execution("word-limit-feedback", "retry", "rewrite loop with a word-count complaint")
for words in (73, 66, 58, 61):
    ex.llm(MINI, "Rewrite the product description for the Trailblazer 2 hiking boots so that "
                 "it is under 50 words, mentions the waterproof membrane and the Vibram sole, "
                 f"and ends with a call to action. Your previous answer had {words} words.",
           "loop")
    ex.tool("count_words", outcome=str(words))

ex = execution("failing-test-loop", "retry", "coding agent fixing the same failing test")
for day in (4, 6, 4, 3):
    ex.tool("pytest", target="tests/test_utils.py::test_parse_date", outcome="failed")
    ex.llm(CLAUDE, "Fix the failing test tests/test_utils.py::test_parse_date. pytest output: "
                   "AssertionError: assert parse_date('2026-01-05T23:30:00-02:00') == "
                   f"date(2026, 1, 5); got date(2026, 1, {day}). Show the corrected "
                   "parse_date function from src/utils/dates.py.", "loop")
    ex.tool("apply_patch", outcome="ok")

ex = execution("short-reask", "paraphrase", "a short question asked again with small variations")
for message in ("How do I reset my password?", "how do I reset my password??",
                "How do I reset my password", "HOW DO I RESET MY PASSWORD"):
    ex.llm(MINI, message, "loop")
    ex.tool("kb_lookup", outcome="no match")

ex = execution("export-poll", "retry", "a polling loop on a job's progress")
for pct in (3, 8, 15, 22, 29, 35, 41, 41, 41, 41, 41, 41):
    ex.tool("get_job", job="job-7731")
    ex.llm(MINI, f"Is the export job job-7731 finished? Current status: RUNNING, progress "
                 f"{pct}%. Answer yes or no, and if no, how long to wait before checking again.",
           "loop", seconds=30)

ex = execution("email-tone-drift", "reformulation",
               "user keeps asking to redo an email, adding a tweak")
email = ("Draft a polite email to my landlord, Mr. Patel, about the broken heater in flat 3B. "
         "It has not worked since Monday, it is 14 degrees inside, and I asked twice already.")
ex.llm(GPT, email, "loop")
ex.llm(GPT, email + " Make it shorter.", "loop")
ex.llm(GPT, email + " Make it shorter and more formal.", "loop")
ex.llm(GPT, email + " Make it shorter, more formal, and mention the tenancy agreement.", "loop")

ex = execution("try-again-prefixes", "reformulation", "different retry prefixes on one instruction")
instruction = ("list the five largest cities of Brazil by population with their state and an "
               "approximate population figure, as a markdown table with the columns City, "
               "State, Population.")
for prefix in ("Please ", "Try again: ", "One more time, ", "That table was wrong. Again: "):
    ex.llm(LLAMA, prefix + instruction, "loop")
    ex.tool("validate_table", outcome="error")

ex = execution("tool-output-ids", "retry", "retry decision on a tool error with changing ids")
for rid, stamp in (("a81f0c2d9e", 1773306843), ("b92e1d3f0a", 1773306851),
                   ("c03f2e4a1b", 1773306866)):
    ex.llm(GPT, f"Tool result: {{\"status\": \"error\", \"code\": 503, \"request_id\": "
                f"\"{rid}\", \"ts\": {stamp}}}. The weather API call for Paris failed. Decide "
                "whether to retry, use the cached forecast, or tell the user it is unavailable.",
           "loop")
    ex.tool("weather_api", city="Paris", outcome="503")

ex = execution("loop-inside-longer-run", "retry", "a loop of three in the middle of a normal run")
ex.llm(GPT, "Read the user's request and list the sub-tasks needed to plan a three-day trip "
            "to Kyoto in April for two adults interested in temples and food.")
ex.tool("search_hotels", city="Kyoto")
ex.llm(GPT, "Pick the best of these three hotels for a couple who want to walk to Gion: "
            "Hotel Gracery Kyoto Sanjo, The Thousand Kyoto, Ryokan Yachiyo. Explain in two "
            "sentences.")
for i in range(3):
    ex.llm(GPT, "Call the train_times tool for the Haruka express from Kansai Airport to Kyoto "
                f"Station on 10 April around 15:00. (call #{i + 1}, previous call timed out)",
           "loop")
    ex.tool("train_times", outcome="timeout")
ex.llm(GPT, "Write a day-by-day itinerary for the three days using the hotel and the "
            "restaurants the user liked, with travel times between places.")

ex = execution("paraphrase-long-context", "paraphrase",
               "re-asks of one question over one long document")
doc = ("Document: The Helios-3 battery module has a nominal capacity of 5.2 kWh, a usable "
       "capacity of 4.8 kWh, and a rated cycle life of 6,000 cycles at 80% depth of discharge. "
       "Operating temperature is -10 to 50 degrees Celsius; charging below 0 degrees is "
       "blocked by the BMS. Up to 8 modules can be connected in parallel. Warranty: 10 years "
       "or 70% capacity retention, whichever comes first.")
ex.llm(CLAUDE, doc + "\nQuestion: How many charge cycles is the module rated for?", "loop")
ex.tool("answer_check", outcome="incomplete")
ex.llm(CLAUDE, doc + "\nQuestion: What is the rated cycle life of the module?", "loop")
ex.tool("answer_check", outcome="incomplete")
ex.llm(CLAUDE, doc + "\nQuestion: For how many cycles is the battery module rated, and at "
               "what depth of discharge?", "loop")

ex = execution("checkpointed-scrape-retry", "retry", "scraper retrying a page with a cache-buster")
for cb in ("1773306843123", "1773306849877", "1773306858012", "1773306870456"):
    ex.checkpoint("scrape", url="https://news.example.org/markets")
    ex.llm(MINI, f"Here is the HTML of https://news.example.org/markets?_cb={cb} (truncated): "
                 "<div class=\"ticker\"><span>DAX</span><span>--</span></div><div "
                 "class=\"ticker\"><span>FTSE</span><span>--</span></div>. Extract the index "
                 "values as JSON. If they are missing, say which elements are empty.", "loop")

ex = execution("spanish-reformulation", "reformulation", "Spanish re-asks of one request")
ask = ("un resumen de tres líneas del contrato de alquiler adjunto, destacando la duración, "
       "el importe de la fianza y las condiciones de rescisión anticipada.")
for prefix in ("Necesito ", "Por favor, dame ", "Otra vez: necesito "):
    ex.llm(GPT, prefix + ask, "loop")
    ex.tool("render", outcome="error")


ex = execution("paraphrase-short-chat", "paraphrase",
               "a user re-asking a short question in other words (no shared context)")
for message in ("Which flights leave Lisbon for Boston tomorrow morning?",
                "Are there any morning flights from Lisbon to Boston tomorrow?",
                "Show me tomorrow morning's flights from Lisbon to Boston."):
    ex.llm(MINI, message, "loop", seconds=20)
    ex.tool("search_flights", outcome="[]")

ex = execution("paraphrase-short-support", "paraphrase",
               "the same short support question, reworded each time")
for message in ("Why was my card declined at checkout?",
                "My card got declined when I tried to check out, why?",
                "Checkout keeps declining my card. What is the reason?",
                "Why does checkout decline my card?"):
    ex.llm(GPT, message, "loop", seconds=30)

ex = execution("synonym-instruction-transcript", "paraphrase",
               "one instruction reworded with synonyms over the same transcript")
transcript = ("\n\nTranscript: Dana: the vendor contract renews on the 30th. Eli: legal wants "
              "the liability cap raised first. Dana: then we need finance to sign off on the "
              "new price. Eli: I can draft the amendment by Friday. Dana: good, and let's tell "
              "the support team about the migration window next Tuesday.")
for instruction in ("Summarize the meeting transcript in five bullet points.",
                    "Give me a five-bullet summary of the meeting transcript.",
                    "Condense the meeting transcript below into 5 bullets."):
    ex.llm(CLAUDE, instruction + transcript, "loop")
    ex.tool("post_to_slack", outcome="error: 500")

# ============================================================================================
# Negatives: shared words, but not the same ask
# ============================================================================================

ex = execution("different-questions", "negative",
               "a support agent answering different sub-questions")
for message in (
    "What is the shipping time for standard delivery to Germany?",
    "Does the Trailblazer 2 hiking boot come in half sizes?",
    "Can I change the delivery address after the order has shipped?",
    "Which payment methods do you accept for orders over 1,000 EUR?",
    "How do I apply a discount code that I received by email?",
    "Is there a warranty on the waterproof membrane of the boots?",
):
    ex.llm(MINI, message)
    ex.tool("search_kb")

ex = execution("rag-new-chunks", "negative", "RAG steps, each with a different retrieved chunk")
chunks = (
    "Chunk 12 (HR handbook, section 4.2): Employees accrue 2.08 days of paid leave per month "
    "of service. Leave must be requested at least two weeks in advance through the HR portal, "
    "except for sick leave, which is reported on the first day of absence.",
    "Chunk 31 (HR handbook, section 7.1): Unused paid leave of up to five days may be carried "
    "over into the next calendar year and must be taken before 31 March; any remaining days "
    "beyond that are forfeited unless a manager approves an exception in writing.",
    "Chunk 44 (Benefits guide, 2026): Part-time employees receive paid leave pro rata to their "
    "contracted hours. Parental leave is separate from annual leave and is described in the "
    "family policy, which also covers adoption and fostering.",
    "Chunk 58 (Payroll FAQ): When an employee leaves the company, accrued but untaken paid "
    "leave is paid out in the final salary, calculated at the daily rate of the base salary "
    "without bonuses or allowances.",
)
for chunk in chunks:
    ex.tool("vector_search", k=1)
    ex.llm(GPT, "Using only the context below, note anything relevant to the question 'how "
                f"many vacation days can I carry over?'.\n\nContext: {chunk}")

ex = execution("rag-accumulating", "negative", "iterative retrieval: the context grows each step")
gathered: list[str] = []
for chunk in chunks:
    gathered.append(chunk)
    ex.tool("vector_search", k=1)
    ex.llm(GPT, "Question: how many vacation days can I carry over, and until when?\n\nContext "
                "so far:\n" + "\n".join(gathered) + "\n\nIs the context enough to answer? If "
                "not, what should be retrieved next?")

ex = execution("bulk-sentiment", "negative", "bulk job: one template over different reviews")
for review in (
    "The boots were comfortable from day one and kept my feet dry on a 20 km hike in the rain.",
    "Arrived with a torn box and one lace missing. Support replaced it quickly, though.",
    "Way too narrow for me, had to return them. The return label was easy to print.",
    "Solid grip on wet rock, but the sole started to peel after two months of light use.",
    "I ordered my usual size and they fit perfectly; the color is darker than in the photos.",
    "Customer service never answered my emails about the delayed order. Very disappointed.",
    "Great value for the price, I would buy them again for my whole family.",
    "The insoles flattened within a week and my heels hurt on longer walks.",
):
    ex.llm(MINI, "Classify the sentiment of this product review as positive, negative or "
                 f"mixed, and give a one-line reason.\n\nReview: {review}")

ex = execution("bulk-translation", "negative", "bulk job: translating different sentences")
for sentence in (
    "Your order has been shipped and will arrive within three business days.",
    "We could not process your payment; please check your card details.",
    "Thank you for your feedback, our team will review it this week.",
    "The item you requested is back in stock in your size.",
    "Your subscription renews automatically unless you cancel before the end of the month.",
    "Please bring a photo ID when you collect the parcel at the pickup point.",
):
    ex.llm(GPT, "Translate the following sentence from English to French. Keep the tone "
                "friendly and do not add explanations.\n\nSentence: " + sentence)

ex = execution("bulk-article-summaries", "negative", "map step: summarizing different articles")
for article in (
    "The city council approved a plan to convert two lanes of Market Street into protected "
    "bike lanes by 2027, despite objections from delivery companies about loading zones. "
    "The project will cost 18 million dollars, mostly covered by a state grant.",
    "Researchers at the university published a study showing that a four-day work week "
    "pilot at 61 companies reduced burnout scores without lowering revenue; most firms kept "
    "the schedule after the trial ended.",
    "A heat wave is expected to push temperatures above 40 degrees in southern Spain this "
    "weekend. Authorities urged people to avoid outdoor work between noon and 6pm and opened "
    "cooling centers in public libraries.",
    "The central bank left interest rates unchanged for the third consecutive meeting, citing "
    "sticky services inflation, and signaled that cuts are unlikely before the autumn.",
):
    ex.llm(CLAUDE, "Summarize the news article below in one sentence for a daily briefing."
                   f"\n\nArticle: {article}")

ex = execution("bulk-order-ids", "negative",
               "bulk job whose items differ only by a number (indistinguishable from a counter)")
for order in (10023, 10024, 10031, 10045, 10046):
    ex.tool("get_order", order=order)
    ex.llm(MINI, f"Look up order {order} and write a one-sentence shipping status update for "
                 "the customer.")

ex = execution("followups-same-topic", "negative", "follow-up questions on one topic")
for message in (
    "What is the capital of Australia?",
    "What is the population of Canberra?",
    "How far is Canberra from Sydney by car?",
    "What are the best museums to visit in Canberra?",
):
    ex.llm(GPT, message)

ex = execution("fallback-models", "negative", "one question sent to three models in turn")
question = ("Explain the difference between a mutex and a semaphore, with one example of when "
            "to use each.")
for model in (GPT, CLAUDE, LLAMA):
    ex.llm(model, question)
    ex.tool("grade_answer", outcome="low score")

ex = execution("single-retry", "negative",
               "a retry that happened once (two calls, below the cluster size)")
for attempt in (1, 2):
    ex.llm(GPT, f"Attempt {attempt}: extract the list of attendees from the meeting notes "
                "below as a JSON array of names.\n\nNotes: Attendees were Priya, Tom, Ana "
                "and Kwame; Lukas joined late.")
    ex.tool("json_parse", outcome="error")

ex = execution("identical-only", "negative",
               "the exact same call four times (identical_call's job)")
for _ in range(4):
    ex.llm(MINI, "Summarize the open pull requests of repository acme/billing in a table with "
                 "title, author and age.")
    ex.tool("github_list_prs", outcome="error: 502")

ex = execution("code-agent-pipeline", "negative", "coding agent: implement, test, document")
for message in (
    "Write a Python function parse_date(value: str) -> date that accepts ISO-8601 strings "
    "with offsets and returns the calendar date in UTC.",
    "Write pytest unit tests for parse_date covering offsets, the Z suffix, leap days and "
    "invalid input.",
    "Write a docstring and a short README section describing parse_date and its edge cases.",
    "Refactor src/utils/dates.py so that parse_date and format_date share the timezone "
    "handling helper.",
):
    ex.llm(CLAUDE, message)
    ex.tool("apply_patch", outcome="ok")

ex = execution("plan-steps", "negative", "a plan executed step by step (different steps)")
for step, action in enumerate((
    "search for flights from Lisbon to Boston on 14 May",
    "compare the three cheapest results by total travel time",
    "check the baggage allowance of the chosen fare",
    "fill in the passenger details from the user profile",
    "ask the user to confirm the booking and the price",
), start=1):
    ex.llm(GPT, f"Step {step} of 5: {action}. Reply with the tool call to make.")
    ex.tool("execute_step", step=step)

ex = execution("research-subquestions", "negative", "research agent with different sub-questions")
for message in (
    "Find the year Acme Corp was founded and by whom.",
    "List Acme Corp's three main product lines and their share of revenue.",
    "Who are Acme Corp's two largest competitors in North America?",
    "What did Acme Corp's CEO say about AI in the last earnings call?",
    "Summarize any lawsuits involving Acme Corp in the last five years.",
):
    ex.llm(LLAMA, message)
    ex.tool("web_search")

ex = execution("column-descriptions", "negative", "bulk job: describe each column of a table")
for column, kind in (("customer_id", "bigint, primary key"),
                     ("signup_channel", "text, one of web/app/partner"),
                     ("lifetime_value_eur", "numeric(12,2), recomputed nightly"),
                     ("churned_at", "timestamp with time zone, null while active")):
    ex.llm(MINI, f"Write a one-sentence description for the data catalog of column {column} "
                 f"({kind}) in table analytics.customers.")

ex = execution("chat-turns", "negative", "a user chatting about different things")
for message in (
    "Hi! Can you recommend a good beginner road bike under 1,000 euros?",
    "Is aluminium or carbon better for someone who rides 50 km a week?",
    "What saddle height should I start with if I am 1.78 m tall?",
    "Thanks. Also, how often should I oil the chain?",
):
    ex.llm(CLAUDE, message, seconds=40)

ex = execution("follow-up-emails", "negative", "bulk personalised emails with short items")
for name, company, topic in (("Anna Schmidt", "Bergmann Logistik", "the warehouse pilot"),
                             ("Li Wei", "Harbor Foods", "the Q2 pricing proposal"),
                             ("Carlos Ruiz", "Solaria Energy", "the maintenance contract"),
                             ("Fatima Khan", "Northgate Clinics", "the scheduling demo")):
    ex.llm(GPT, f"Write a short, friendly follow-up email to {name} at {company} about {topic}, "
                "asking for a 20-minute call next week. Sign it as Jordan from Loopsense.")

ex = execution("tool-heavy", "negative", "mostly tool calls, two different llm calls")
for name in ("git_clone", "list_files", "read_file", "read_file", "grep", "read_file"):
    ex.tool(name)
ex.llm(CLAUDE, "Given the repository layout above, where is the HTTP router configured?")
for name in ("read_file", "grep", "read_file"):
    ex.tool(name)
ex.llm(CLAUDE, "Propose a minimal patch that adds a /healthz route returning 200 with the "
               "build version.")

ex = execution("draft-critique-revise", "negative", "generate, critique, revise")
ex.llm(GPT, "Write a 100-word product announcement for the Helios-3 home battery aimed at "
            "homeowners with solar panels.")
ex.llm(GPT, "Critique this announcement for clarity and persuasiveness and list three concrete "
            "improvements: 'Meet Helios-3: store your solar power by day, use it by night. "
            "4.8 kWh usable, 10-year warranty, stack up to 8 modules.'")
ex.llm(GPT, "Revise the announcement using these improvements: lead with savings, add a "
            "customer quote, end with a clear call to action and the launch date.")

ex = execution("flight-routes", "negative", "searching several different routes")
for origin, destination, day in (("Lisbon", "Boston", "14 May"), ("Boston", "Chicago", "18 May"),
                                 ("Chicago", "Denver", "21 May"), ("Denver", "Lisbon", "25 May")):
    ex.llm(LLAMA, f"Find the cheapest direct flight from {origin} to {destination} on {day} and "
                  "return the airline, departure time and price.")
    ex.tool("search_flights")

ex = execution("japanese-questions", "negative", "different Japanese questions in a row")
for message in ("京都で一番古いお寺はどこですか？", "嵐山への行き方を教えてください。",
                "四月の京都の平均気温は何度ですか？", "おすすめの抹茶スイーツの店はありますか？"):
    ex.llm(GPT, message)

ex = execution("map-reduce-chunks", "negative", "summarizing consecutive chunks of one report")
for k, chunk in enumerate((
    "The pilot ran in three warehouses from January to March. Pick rates improved by 9% in "
    "Leeds and 4% in Bristol, while Glasgow saw no change because of a scanner outage.",
    "Staff feedback was mostly positive: 71% preferred the new routing app, citing fewer "
    "walking miles, but night-shift workers reported battery problems with the handhelds.",
    "Costs came in 6% under budget. The main savings came from reduced overtime; the main "
    "overrun was the replacement of 40 handheld batteries in February.",
    "The recommendation is to roll out to all nine warehouses in Q3, after fixing the battery "
    "issue and adding offline mode to the app for sites with weak Wi-Fi.",
), start=1):
    ex.llm(CLAUDE, f"Summarize chunk {k} of 4 of the warehouse pilot report in two sentences."
                   f"\n\n{chunk}")

ex = execution("contract-clauses", "negative", "same question asked of different clauses")
for clause in (
    "12.1 Either party may terminate this Agreement for convenience with ninety (90) days' "
    "written notice to the other party.",
    "7.3 The Supplier shall maintain professional liability insurance of not less than two "
    "million euros for the duration of the Agreement.",
    "15.2 This Agreement is governed by the laws of the Netherlands, and the courts of "
    "Amsterdam have exclusive jurisdiction.",
    "9.4 Invoices are payable within thirty (30) days; late payments bear interest at the "
    "statutory commercial rate.",
):
    ex.llm(GPT, "Does this contract clause say anything about termination? Answer yes or no "
                f"and quote the relevant words.\n\nClause: {clause}")

ex = execution("decomposed-question", "negative", "a question decomposed into sub-questions")
for sub in (
    "Sub-question 1: What was Tesla's total revenue in 2023?",
    "Sub-question 2: What was BYD's total revenue in 2023?",
    "Sub-question 3: Which of the two sold more battery-electric vehicles in Q4 2023?",
    "Sub-question 4: Given the answers above, which company grew faster year over year?",
):
    ex.llm(GPT, sub)
    ex.tool("web_search")

ex = execution("agent-with-memory", "negative", "an agent whose each turn carries new tool results")
for result in (
    "get_calendar returned: Mon 10:00 standup, Mon 14:00 design review, Tue free.",
    "get_weather returned: Tuesday 18 degrees and sunny in Porto, light wind.",
    "search_restaurants returned: Cantinho do Avillez (4.6), Taberna dos Mercadores (4.7).",
    "book_table returned: confirmed for 2 at Taberna dos Mercadores, Tue 20:00, ref TM-5531.",
):
    ex.llm(CLAUDE, f"{result} Decide the next step for organising the user's Tuesday evening "
                   "dinner in Porto.")


ex = execution("cv-skill-extraction", "negative", "bulk job: long, different CVs")
for cv in (
    "Senior data engineer, 8 years. Built streaming pipelines with Kafka and Flink at a "
    "fintech, migrated a 40 TB warehouse from Redshift to Snowflake, mentors two juniors.",
    "Nurse turned UX researcher: 5 years in an ICU, then a bootcamp; ran 60 usability "
    "interviews for a hospital scheduling app and designed its onboarding flow in Figma.",
    "Mechanical engineer specialised in HVAC for commercial buildings; AutoCAD and Revit, "
    "site supervision on three office towers, certified energy auditor since 2021.",
):
    ex.llm(MINI, f"Extract the candidate's top five skills as a JSON array.\n\nCV: {cv}")

ex = execution("weekly-team-notes", "negative", "bulk job: one summary per team, short notes")
for team, notes in (("Payments", "shipped refunds API v2; on-call was quiet; hiring one SRE"),
                    ("Search", "relevance model retrained; latency regression fixed Tuesday"),
                    ("Mobile", "iOS release delayed by App Store review; Android crash rate down"),
                    ("Data", "warehouse costs down 14%; new churn dashboard live for sales")):
    ex.llm(GPT, f"Write a two-sentence weekly update for the {team} team from these notes: "
                f"{notes}.")

def main() -> None:
    data = [ex.as_dict() for ex in SETS]
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    positives = sum(1 for ex in SETS if ex.clusters)
    print(f"wrote {OUT.name}: {len(SETS)} executions ({positives} with expected clusters)")


if __name__ == "__main__":
    main()
