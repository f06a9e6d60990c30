"""Unit conversion for the quantities questions ask about: length, mass, time, area, volume, data size
(binary multiples), speed and temperature, with English and Chinese unit names.

Each unit is a factor to its dimension's base unit; temperature is affine and handled apart.
"""

from __future__ import annotations

from tools.errors import ToolError

# dimension -> unit names -> factor to the base unit (first entry)
_UNITS: dict[str, dict[tuple[str, ...], float]] = {
    "length": {
        ("m", "meter", "meters", "metre", "metres", "米", "公尺"): 1.0,
        ("km", "kilometer", "kilometers", "kilometre", "kilometres", "公里", "千米"): 1000.0,
        ("cm", "centimeter", "centimeters", "centimetre", "厘米", "公分"): 0.01,
        ("mm", "millimeter", "millimeters", "millimetre", "毫米"): 0.001,
        ("mi", "mile", "miles", "英里"): 1609.344,
        ("ft", "foot", "feet", "英尺"): 0.3048,
        ("in", "inch", "inches", "英寸"): 0.0254,
        ("yd", "yard", "yards", "码"): 0.9144,
        ("li", "里"): 500.0,
    },
    "mass": {
        ("kg", "kilogram", "kilograms", "公斤", "千克"): 1.0,
        ("g", "gram", "grams", "克"): 0.001,
        ("mg", "milligram", "milligrams", "毫克"): 1e-6,
        ("t", "ton", "tons", "tonne", "tonnes", "吨"): 1000.0,
        ("lb", "lbs", "pound", "pounds", "磅"): 0.45359237,
        ("oz", "ounce", "ounces", "盎司"): 0.028349523125,
        ("jin", "斤"): 0.5,
    },
    "time": {
        ("s", "sec", "second", "seconds", "秒"): 1.0,
        ("min", "minute", "minutes", "分钟", "分"): 60.0,
        ("h", "hr", "hour", "hours", "小时", "时"): 3600.0,
        ("day", "days", "天", "日"): 86400.0,
        ("week", "weeks", "周", "星期"): 604800.0,
        ("year", "years", "年"): 365.25 * 86400.0,
    },
    "area": {
        ("m2", "m²", "square meter", "square meters", "平方米"): 1.0,
        ("km2", "km²", "square kilometer", "square kilometers", "平方公里", "平方千米"): 1e6,
        ("ha", "hectare", "hectares", "公顷"): 1e4,
        ("acre", "acres", "英亩"): 4046.8564224,
        ("mu", "亩"): 10000.0 / 15.0,
        ("sq mi", "square mile", "square miles", "平方英里"): 2589988.110336,
    },
    "volume": {
        ("l", "liter", "liters", "litre", "litres", "升", "公升"): 1.0,
        ("ml", "milliliter", "milliliters", "毫升"): 0.001,
        ("m3", "m³", "cubic meter", "cubic meters", "立方米"): 1000.0,
        ("gal", "gallon", "gallons", "加仑"): 3.785411784,
    },
    "data": {  # binary multiples, as file sizes and memory are usually meant
        ("b", "byte", "bytes", "字节"): 1.0,
        ("kb", "kib", "kilobyte", "kilobytes"): 1024.0,
        ("mb", "mib", "megabyte", "megabytes"): 1024.0**2,
        ("gb", "gib", "gigabyte", "gigabytes"): 1024.0**3,
        ("tb", "tib", "terabyte", "terabytes"): 1024.0**4,
    },
    "speed": {
        ("m/s", "米每秒", "米/秒"): 1.0,
        ("km/h", "kph", "公里每小时", "千米每小时", "公里/小时"): 1000.0 / 3600.0,
        ("mph", "miles per hour", "英里每小时"): 1609.344 / 3600.0,
        ("knot", "knots", "节"): 1852.0 / 3600.0,
    },
}
_TEMPERATURE = {
    "c": ("c", "°c", "℃", "celsius", "摄氏度", "摄氏"),
    "f": ("f", "°f", "℉", "fahrenheit", "华氏度", "华氏"),
    "k": ("k", "kelvin", "开尔文", "开"),
}
_INDEX: dict[str, tuple[str, float]] = {
    name: (dimension, factor)
    for dimension, units in _UNITS.items()
    for names, factor in units.items()
    for name in names
}


def _lookup(unit: str) -> tuple[str, float | str]:
    key = " ".join(unit.strip().lower().split())
    for scale, names in _TEMPERATURE.items():
        if key in names:
            return "temperature", scale
    if key in _INDEX:
        return _INDEX[key]
    raise ToolError(f"unknown unit {unit!r}")


def _to_kelvin(value: float, scale: str) -> float:
    return {"c": value + 273.15, "f": (value - 32) * 5 / 9 + 273.15, "k": value}[scale]


def _from_kelvin(value: float, scale: str) -> float:
    return {"c": value - 273.15, "f": (value - 273.15) * 9 / 5 + 32, "k": value}[scale]


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit`` expressed in ``to_unit``; units of different dimensions are an error."""
    source_dim, source = _lookup(from_unit)
    target_dim, target = _lookup(to_unit)
    if source_dim != target_dim:
        raise ToolError(f"cannot convert {source_dim} ({from_unit}) to {target_dim} ({to_unit})")
    if source_dim == "temperature":
        return _from_kelvin(_to_kelvin(float(value), str(source)), str(target))
    return float(value) * float(source) / float(target)


def known_units() -> list[str]:
    """Every unit name accepted, for tool descriptions and error messages."""
    return sorted(set(_INDEX) | {name for names in _TEMPERATURE.values() for name in names})
