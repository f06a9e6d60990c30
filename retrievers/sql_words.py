"""The words the offline SQL planner reads (data, not rules): aggregate cues, comparison phrases,
superlatives and the column concepts some adjectives stand for, in English and Chinese.

An English phrase matches on word boundaries (case-folded); a Chinese one as a substring.
"""

from __future__ import annotations

# aggregate -> cue phrases
AGGREGATES: dict[str, tuple[str, ...]] = {
    "count": (
        "how many",
        "number of",
        "count",
        "多少条",
        "多少个",
        "多少名",
        "多少人",
        "几个",
        "几条",
        "几名",
        "几人",
        "数量",
    ),
    "sum": (
        "total",
        "sum",
        "combined",
        "altogether",
        "in all",
        "总",
        "合计",
        "总计",
        "总和",
        "加起来",
        "一共",
    ),
    "avg": ("average", "mean", "平均", "均值"),
}
SUPERLATIVES: dict[str, tuple[str, ...]] = {
    "max": (
        "highest",
        "maximum",
        "largest",
        "biggest",
        "most",
        "greatest",
        "top",
        "max",
        "最高",
        "最大",
        "最多",
    ),
    "min": ("lowest", "minimum", "smallest", "least", "fewest", "min", "最低", "最小", "最少"),
}
# superlative adjectives that name a column concept: word -> (max|min, concept)
CONCEPT_SUPERLATIVES: dict[str, tuple[str, str]] = {
    "youngest": ("min", "age"),
    "oldest": ("max", "age"),
    "最年轻": ("min", "age"),
    "年纪最大": ("max", "age"),
    "年龄最大": ("max", "age"),
    "best paid": ("max", "salary"),
    "highest paid": ("max", "salary"),
    "most expensive": ("max", "price"),
    "cheapest": ("min", "price"),
    "最贵": ("max", "price"),
    "最便宜": ("min", "price"),
}
# comparison phrase -> operator, optionally the concept it implies ("older than" compares ages)
COMPARISONS: dict[str, tuple[str, str]] = {
    "more than": (">", ""),
    "greater than": (">", ""),
    "over": (">", ""),
    "above": (">", ""),
    "at least": (">=", ""),
    "or more": (">=", ""),
    "or later": (">=", ""),
    "or above": (">=", ""),
    "after": (">", ""),
    "older than": (">", "age"),
    "less than": ("<", ""),
    "fewer than": ("<", ""),
    "under": ("<", ""),
    "below": ("<", ""),
    "at most": ("<=", ""),
    "or less": ("<=", ""),
    "or earlier": ("<=", ""),
    "before": ("<", ""),
    "younger than": ("<", "age"),
    "超过": (">", ""),
    "大于": (">", ""),
    "高于": (">", ""),
    "多于": (">", ""),
    "以上": (">=", ""),
    "之后": (">", ""),
    "以后": (">", ""),
    "不少于": (">=", ""),
    "至少": (">=", ""),
    "低于": ("<", ""),
    "小于": ("<", ""),
    "少于": ("<", ""),
    "不到": ("<", ""),
    "以下": ("<=", ""),
    "之前": ("<", ""),
    "以前": ("<", ""),
    "不超过": ("<=", ""),
    "至多": ("<=", ""),
}
# A concept's words (the column it means may be named any of these); also words of a question that
# refer to that concept ("earn" asks about the salary column).
CONCEPTS: dict[str, tuple[str, ...]] = {
    "age": ("age", "ages", "old", "young", "年龄", "岁", "年纪"),
    "salary": (
        "salary",
        "salaries",
        "pay",
        "paid",
        "earn",
        "earns",
        "wage",
        "wages",
        "income",
        "工资",
        "薪水",
        "薪资",
        "收入",
    ),
    "price": ("price", "prices", "cost", "costs", "价格", "售价", "单价"),
    "date": ("date", "day", "hired", "joined", "started", "日期", "时间", "入职"),
    "name": ("name", "names", "who", "whom", "姓名", "名字", "谁"),
    "quantity": ("quantity", "amount", "units", "sold", "volume", "数量", "销量"),
}
# question words that ask for a column's values ("which city", "哪个城市", "what department")
ASKING: tuple[str, ...] = ("which", "what", "哪个", "哪些", "哪一个", "哪家", "什么")
# words that say the question is about records, not one record ("all", "every", "records")
RECORD_WORDS: tuple[str, ...] = ("record", "records", "row", "rows", "entries", "记录", "条")
