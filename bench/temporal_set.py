"""A synthetic, dated memory set for ranking over time, written for memexdb (no borrowed
data): facts that change (an address, a job, a partner, a phone...) where the newest version
must rank first, stable facts stated once long ago that must still be found, and everyday
chatter in between, spread over months of sessions with realistic dates.

    python bench/temporal_set.py --out bench/out/temporal.json   # seed 7, 20 users

Each user is one tenant. A user's timeline is 8-14 months of sessions (every 2-9 days, 3-8
plain English sentences each, a few minutes apart); questions are asked 1-30 days after
the last session. Output JSON: {"seed", "users": [{"user", "asked_at", "memories":
[{"id", "content", "at"}], "questions": [{"kind": "update" | "stable", "query", "gold":
newest id (update) or the fact's id (stable), "older": ids of older versions}]}]}.
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# Facts that change: each slot has value pools, statement templates (one per version kind)
# and questions, all phrased differently from the statements.
CITIES = [
    "Leeds",
    "Bristol",
    "Lisbon",
    "Porto",
    "Lyon",
    "Denver",
    "Austin",
    "Oslo",
    "Dublin",
    "Glasgow",
    "Seattle",
    "Toronto",
    "Valencia",
    "Munich",
    "Krakow",
]
STREETS = [
    "Elm Street",
    "Harbour Road",
    "Mill Lane",
    "Park Avenue",
    "Church Street",
    "Station Road",
    "Maple Drive",
    "King's Road",
    "Orchard Close",
    "River Walk",
]
COMPANIES = [
    "Northwind Logistics",
    "Bluefin Analytics",
    "Acorn Health",
    "Quayside Bank",
    "Helix Robotics",
    "Brightpath Schools",
    "Copperleaf Games",
    "Tidewater Energy",
    "Lumen Labs",
    "Redwood Insurance",
]
ROLES = [
    "data analyst",
    "nurse",
    "product manager",
    "civil engineer",
    "teacher",
    "backend developer",
    "accountant",
    "UX designer",
    "sales lead",
    "lab technician",
]
PARTNERS = [
    "Maya",
    "Jonas",
    "Priya",
    "Tom",
    "Elena",
    "Marcus",
    "Sofia",
    "Daniel",
    "Aisha",
    "Leo",
    "Hannah",
    "Ravi",
]
PHONES = [
    "iPhone 12",
    "iPhone 15",
    "Pixel 7",
    "Pixel 8",
    "Galaxy S21",
    "Galaxy S24",
    "OnePlus 11",
    "Fairphone 5",
    "Xperia 5",
]
CARS = [
    "Toyota Corolla",
    "Honda Civic",
    "VW Golf",
    "Tesla Model 3",
    "Ford Focus",
    "Kia Niro",
    "Mazda 3",
    "Skoda Octavia",
]
FOODS = [
    "Thai curry",
    "sushi",
    "lasagne",
    "ramen",
    "tacos",
    "falafel wraps",
    "mushroom risotto",
    "pho",
    "butter chicken",
]
SPORTS = ["running", "climbing", "swimming", "yoga", "cycling", "tennis", "rowing", "boxing"]
GYMS = [
    "FitBox on Queen Street",
    "the YMCA near the station",
    "Iron Works Gym",
    "PureGym in the city centre",
    "the community pool on Hill Road",
    "Crux Climbing Wall",
]
DIETS = ["vegetarian", "vegan", "pescatarian", "low-carb", "gluten-free"]
DOCTORS = ["Dr. Patel", "Dr. Okafor", "Dr. Lindqvist", "Dr. Moreau", "Dr. Chen", "Dr. Novak"]
BOOKS = [
    "Dune",
    "Middlemarch",
    "The Overstory",
    "Piranesi",
    "Station Eleven",
    "A Gentleman in Moscow",
    "The Remains of the Day",
]


def _address(r: random.Random) -> str:
    return f"{r.randint(2, 98)} {r.choice(STREETS)} in {r.choice(CITIES)}"


SLOTS: dict[str, dict[str, Any]] = {
    "address": {
        "value": _address,
        "first": ["I live at {v}.", "Our flat is at {v}, it's tiny but cosy."],
        "update": [
            "We finally moved! The new place is at {v}.",
            "Moving day is done, my address is now {v}.",
            "Just signed the lease, I'm living at {v} from this week.",
        ],
        "questions": ["What is my home address?", "Where do I live?"],
    },
    "job": {
        "value": lambda r: f"{r.choice(ROLES)} at {r.choice(COMPANIES)}",
        "first": ["I work as a {v}.", "My job: {v}, been there a couple of years."],
        "update": [
            "Big news, I accepted an offer and I'm now a {v}.",
            "First week in the new job as a {v} went well.",
            "I changed jobs, I'm a {v} now.",
        ],
        "questions": ["Where do I work and what is my job?", "What is my job?"],
    },
    "partner": {
        "value": lambda r: r.choice(PARTNERS),
        "first": [
            "My partner {v} and I have been together for a while.",
            "I'm dating someone called {v}.",
        ],
        "update": [
            "I've started seeing someone new, their name is {v}.",
            "{v} and I are officially a couple now.",
            "After the breakup I met {v}, and we're together now.",
        ],
        "questions": ["What is my partner's name?", "Who am I dating?"],
    },
    "phone": {
        "value": lambda r: r.choice(PHONES),
        "first": ["My phone is a {v}.", "I use a {v} as my phone."],
        "update": [
            "Got a new phone today, a {v}.",
            "I replaced my old phone with a {v}.",
            "Switched phones, I'm on a {v} now.",
        ],
        "questions": ["What phone do I have?", "Which smartphone model do I use?"],
    },
    "car": {
        "value": lambda r: r.choice(CARS),
        "first": ["I drive a {v}.", "My car is a {v}, a bit old but reliable."],
        "update": [
            "Sold the old car and bought a {v}.",
            "Picked up my new car, a {v}.",
            "I'm driving a {v} these days.",
        ],
        "questions": ["What car do I drive?", "Which car do I own?"],
    },
    "food": {
        "value": lambda r: r.choice(FOODS),
        "first": ["My favourite food is {v}.", "Nothing beats {v}, it's my favourite dish."],
        "update": [
            "Honestly my new favourite dish is {v}.",
            "These days I'd pick {v} over anything else to eat.",
            "I think {v} has become my favourite food.",
        ],
        "questions": ["What is my favourite food?", "Which dish do I like best?"],
    },
    "sport": {
        "value": lambda r: r.choice(SPORTS),
        "first": ["For exercise I mostly do {v}.", "I keep fit with {v} a few times a week."],
        "update": [
            "I've switched my workouts to {v}.",
            "Lately my main exercise is {v}.",
            "I gave up my old routine and took up {v}.",
        ],
        "questions": ["What do I do for exercise?", "Which sport do I practise?"],
    },
    "gym": {
        "value": lambda r: r.choice(GYMS),
        "first": ["I train at {v}.", "My gym membership is at {v}."],
        "update": [
            "I cancelled my membership and joined {v}.",
            "New gym: {v}, it's much closer.",
            "I go to {v} to train now.",
        ],
        "questions": ["Which gym do I go to?", "Where do I work out?"],
    },
    "diet": {
        "value": lambda r: r.choice(DIETS),
        "first": ["I eat a {v} diet.", "I'm {v}, so keep that in mind for restaurants."],
        "update": [
            "I've changed my diet and I'm {v} now.",
            "Starting this month I'm going {v}.",
            "My doctor suggested it, so my diet is {v} from now on.",
        ],
        "questions": ["What diet do I follow?", "Do I have any dietary restrictions?"],
    },
    "doctor": {
        "value": lambda r: r.choice(DOCTORS),
        "first": ["My GP is {v}.", "I see {v} for check-ups."],
        "update": [
            "I registered with a new GP, {v}.",
            "My family doctor is now {v}.",
            "Changed doctors, I'm seeing {v} from now on.",
        ],
        "questions": ["Who is my doctor?", "What is the name of my GP?"],
    },
}

# Facts stated once and never changed: must be found however old they are.
STABLE: list[tuple[str, str, Any]] = [
    (
        "My sister's name is {v}.",
        "What is my sister's name?",
        lambda r: r.choice(["Clara", "Nadia", "Beth", "Ingrid", "Rosa", "Keiko"]),
    ),
    (
        "I'm allergic to {v}.",
        "What am I allergic to?",
        lambda r: r.choice(["peanuts", "penicillin", "cats", "shellfish", "pollen", "latex"]),
    ),
    (
        "My birthday is on {v}.",
        "When is my birthday?",
        lambda r: f"{r.randint(1, 28)} {r.choice(['March', 'July', 'October', 'January'])}",
    ),
    (
        "I grew up in a small village near {v}.",
        "Where did I grow up?",
        lambda r: r.choice(["York", "Cork", "Bergen", "Ghent", "Bath", "Aarhus"]),
    ),
    (
        "Our dog is called {v}, she's a border collie.",
        "What is my dog's name?",
        lambda r: r.choice(["Biscuit", "Luna", "Pepper", "Maple", "Nova", "Juniper"]),
    ),
    (
        "I studied {v} at university.",
        "What did I study at university?",
        lambda r: r.choice(["chemistry", "history", "architecture", "economics", "linguistics"]),
    ),
    (
        "My blood type is {v}.",
        "What is my blood type?",
        lambda r: r.choice(["A positive", "O negative", "B positive", "AB positive"]),
    ),
    (
        "I'm learning {v} on Duolingo.",
        "Which language am I learning?",
        lambda r: r.choice(["Japanese", "Portuguese", "Korean", "Italian", "Finnish"]),
    ),
    ("My favourite book is {v}.", "What is my favourite book?", lambda r: r.choice(BOOKS)),
    (
        "My best friend from school is {v}.",
        "Who is my best friend from school?",
        lambda r: r.choice(["Oliver", "Zara", "Felix", "Imogen", "Kofi", "Lena"]),
    ),
]

# Everyday chatter, including near misses on the slots' topics (someone else's address,
# a colleague's phone) that must not outrank the user's own facts.
CHATTER = [
    "Had a long day, the meetings just kept coming.",
    "The weather was awful this morning.",
    "Watched a documentary about octopuses last night.",
    "Need to remember to buy milk.",
    "Traffic on the way home was terrible.",
    "I made pancakes for breakfast.",
    "Can you suggest a podcast for my commute?",
    "Slept badly, the neighbours were loud.",
    "The train was late again.",
    "I finished a jigsaw puzzle this weekend.",
    "Work is quiet this week.",
    "I should call my mum tonight.",
    "We had a team lunch at an Italian place.",
    "My laptop keeps freezing.",
    "I'm thinking about painting the living room green.",
    "The cat next door visited again.",
    "Remind me to renew the passport.",
    "It rained all weekend so we stayed in.",
    "My colleague {p} just got a {phone}.",
    "My friend {p} moved to {city} last month.",
    "{p} from work drives a {car}, says it's great.",
    "A friend recommended {food} at a new place.",
    "My cousin started {sport} lessons.",
    "Went to a birthday party for {p} on Saturday.",
    "The office coffee machine is broken.",
    "I read a few chapters before bed.",
    "Planning a weekend trip to {city} maybe.",
    "{p}'s new job at {company} sounds stressful.",
    "Booked a dentist appointment for next month.",
    "Trying to drink more water.",
    "We watched the football at the pub.",
    "The garden needs weeding.",
]


def _fill(template: str, r: random.Random) -> str:
    return template.format(
        p=r.choice(PARTNERS),
        phone=r.choice(PHONES),
        city=r.choice(CITIES),
        car=r.choice(CARS),
        food=r.choice(FOODS),
        sport=r.choice(SPORTS),
        company=r.choice(COMPANIES),
    )


def _distinct(r: random.Random, make: Any, previous: list[str]) -> str:
    for _ in range(50):
        value = str(make(r))
        if value not in previous:
            return value
    return value


def build_user(r: random.Random, index: int) -> dict[str, Any]:
    start = datetime(2025, 1, 6, 8, 0, tzinfo=UTC) + timedelta(days=r.randint(0, 60))
    months = r.randint(8, 14)
    end = start + timedelta(days=30 * months)
    sessions = []
    day = start
    while day < end:
        sessions.append(day.replace(hour=r.randint(7, 21), minute=r.randint(0, 59)))
        day += timedelta(days=r.randint(2, 9))
    # what each session says: (kind, payload); chatter fills the rest
    plan: list[list[tuple[str, Any]]] = [[] for _ in sessions]
    questions: list[dict[str, Any]] = []
    slots = r.sample(sorted(SLOTS), 7)
    for name in slots:
        versions = r.choice([2, 2, 3, 3, 4])
        # first version in the first third, later versions spread over the rest
        points = sorted(r.sample(range(len(sessions) // 3, len(sessions)), versions - 1))
        at = [r.randrange(0, len(sessions) // 3), *points]
        values: list[str] = []
        for v in range(versions):
            values.append(_distinct(r, SLOTS[name]["value"], values))
            # every version draws from the same phrasings (plain statements and news of a
            # change alike), so neither the old nor the new version is systematically the
            # closer match to the question: only the ranking's use of time can order them
            pool = SLOTS[name]["first"] + SLOTS[name]["update"]
            plan[at[v]].append(("slot", (name, v, r.choice(pool).format(v=values[v]))))
        questions.append({"kind": "update", "slot": name, "versions": versions})
    for template, question, make in r.sample(STABLE, 6):
        # stated once in the first half of the timeline
        plan[r.randrange(0, len(sessions) // 2)].append(
            ("stable", (question, template.format(v=make(r))))
        )
    memories: list[dict[str, Any]] = []
    ids: dict[tuple[str, int], str] = {}
    stable_ids: dict[str, str] = {}
    for s, when in enumerate(sessions):
        lines = [_fill(r.choice(CHATTER), r) for _ in range(r.randint(3, 8))]
        items: list[tuple[str, Any]] = [("chatter", line) for line in lines]
        for item in plan[s]:
            items.insert(r.randint(0, len(items)), item)
        for offset, (kind, payload) in enumerate(items):
            mid = f"u{index}-m{len(memories)}"
            if kind == "slot":
                name, v, content = payload
                ids[(name, v)] = mid
            elif kind == "stable":
                question, content = payload
                stable_ids[question] = mid
            else:
                content = payload
            stamp = when + timedelta(minutes=2 * offset)
            memories.append({"id": mid, "content": content, "at": stamp.isoformat()})
    out_questions = []
    for q in questions:
        name, versions = q["slot"], q["versions"]
        out_questions.append(
            {
                "kind": "update",
                "query": r.choice(SLOTS[name]["questions"]),
                "gold": ids[(name, versions - 1)],
                "older": [ids[(name, v)] for v in range(versions - 1)],
            }
        )
    for question, mid in stable_ids.items():
        out_questions.append({"kind": "stable", "query": question, "gold": mid, "older": []})
    asked = sessions[-1] + timedelta(days=r.randint(1, 30))
    return {
        "user": f"user{index}",
        "asked_at": asked.isoformat(),
        "memories": memories,
        "questions": out_questions,
    }


def build(seed: int = 7, users: int = 20) -> dict[str, Any]:
    r = random.Random(seed)
    return {"seed": seed, "users": [build_user(r, i) for i in range(users)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("bench/out/temporal.json"))
    args = parser.parse_args()
    data = build(args.seed, args.users)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1))
    n = sum(len(u["memories"]) for u in data["users"])
    q = sum(len(u["questions"]) for u in data["users"])
    print(f"wrote {args.out}: {len(data['users'])} users, {n} memories, {q} questions")


if __name__ == "__main__":
    main()
