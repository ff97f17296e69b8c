//! Date and time functions (DATE_ADD and `+ INTERVAL`, DATEDIFF,
//! TIMESTAMPDIFF, DATE_FORMAT, STR_TO_DATE, EXTRACT, YEAR .. WEEK,
//! FROM_UNIXTIME, TO_DAYS, ...) and TIME functions (TIME, TIMEDIFF,
//! ADDTIME, SEC_TO_TIME, TIME_FORMAT, CURTIME, ...) with MySQL 8.0's
//! semantics. A TIME result beyond +-838:59:59 is clamped with warning
//! 1292.
//!
//! Arguments are evaluated first. A DATE or DATETIME value is used as it
//! is; a string or a number is read as MySQL reads one (`2024-1-5`,
//! `20240105`, `2024-01-05 10:11:12.5`, two-digit years); one that is not
//! a valid date gives NULL with warning 1292. A result outside the years
//! 0000..9999 is NULL with warning 1441. The session time zone is UTC, as
//! `NOW()` is. No locks, no I/O; pure functions of their arguments
//! except the clock readers.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::SqlResult;
use crate::expr::{num_f64, text_of, to_i64, Env};
use crate::types::{pack_date, pack_datetime, unpack_date, unpack_datetime, Value};

/// Units of `INTERVAL n unit`, EXTRACT, TIMESTAMPDIFF and TIMESTAMPADD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// MICROSECOND
    Microsecond,
    /// SECOND
    Second,
    /// MINUTE
    Minute,
    /// HOUR
    Hour,
    /// DAY
    Day,
    /// WEEK
    Week,
    /// MONTH
    Month,
    /// QUARTER
    Quarter,
    /// YEAR
    Year,
    /// SECOND_MICROSECOND ('s.f')
    SecondMicrosecond,
    /// MINUTE_MICROSECOND ('m:s.f')
    MinuteMicrosecond,
    /// MINUTE_SECOND ('m:s')
    MinuteSecond,
    /// HOUR_MICROSECOND ('h:m:s.f')
    HourMicrosecond,
    /// HOUR_SECOND ('h:m:s')
    HourSecond,
    /// HOUR_MINUTE ('h:m')
    HourMinute,
    /// DAY_MICROSECOND ('d h:m:s.f')
    DayMicrosecond,
    /// DAY_SECOND ('d h:m:s')
    DaySecond,
    /// DAY_MINUTE ('d h:m')
    DayMinute,
    /// DAY_HOUR ('d h')
    DayHour,
    /// YEAR_MONTH ('y-m')
    YearMonth,
}

impl Unit {
    /// The unit named `name` (any case).
    pub fn parse(name: &str) -> Option<Unit> {
        Some(match name.to_ascii_uppercase().as_str() {
            "MICROSECOND" => Unit::Microsecond,
            "SECOND" => Unit::Second,
            "MINUTE" => Unit::Minute,
            "HOUR" => Unit::Hour,
            "DAY" => Unit::Day,
            "WEEK" => Unit::Week,
            "MONTH" => Unit::Month,
            "QUARTER" => Unit::Quarter,
            "YEAR" => Unit::Year,
            "SECOND_MICROSECOND" => Unit::SecondMicrosecond,
            "MINUTE_MICROSECOND" => Unit::MinuteMicrosecond,
            "MINUTE_SECOND" => Unit::MinuteSecond,
            "HOUR_MICROSECOND" => Unit::HourMicrosecond,
            "HOUR_SECOND" => Unit::HourSecond,
            "HOUR_MINUTE" => Unit::HourMinute,
            "DAY_MICROSECOND" => Unit::DayMicrosecond,
            "DAY_SECOND" => Unit::DaySecond,
            "DAY_MINUTE" => Unit::DayMinute,
            "DAY_HOUR" => Unit::DayHour,
            "YEAR_MONTH" => Unit::YearMonth,
            _ => return None,
        })
    }

    /// Whether adding it to a DATE keeps a DATE.
    pub fn is_date_unit(self) -> bool {
        matches!(
            self,
            Unit::Day | Unit::Week | Unit::Month | Unit::Quarter | Unit::Year | Unit::YearMonth
        )
    }

    /// One of MICROSECOND .. YEAR (not a composite unit).
    pub fn is_simple(self) -> bool {
        self.fields() == (1, false)
    }

    /// The fields of a composite unit's string, and whether the last is
    /// microseconds.
    fn fields(self) -> (usize, bool) {
        match self {
            Unit::SecondMicrosecond => (2, true),
            Unit::MinuteMicrosecond => (3, true),
            Unit::MinuteSecond => (2, false),
            Unit::HourMicrosecond => (4, true),
            Unit::HourSecond => (3, false),
            Unit::HourMinute => (2, false),
            Unit::DayMicrosecond => (5, true),
            Unit::DaySecond => (4, false),
            Unit::DayMinute => (3, false),
            Unit::DayHour => (2, false),
            Unit::YearMonth => (2, false),
            _ => (1, false),
        }
    }
}

/// The date and time functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DtFn {
    /// `x + INTERVAL n unit`, DATE_ADD, ADDDATE, TIMESTAMPADD (args x, n);
    /// `true`: subtract (`-`, DATE_SUB, SUBDATE).
    AddInterval(Unit, bool),
    /// EXTRACT(unit FROM x)
    Extract(Unit),
    /// TIMESTAMPDIFF(unit, a, b)
    TimestampDiff(Unit),
    /// DATEDIFF(a, b)
    DateDiff,
    /// DATE_FORMAT(x, fmt)
    DateFormat,
    /// STR_TO_DATE(s, fmt)
    StrToDate,
    /// YEAR
    Year,
    /// MONTH
    Month,
    /// DAY / DAYOFMONTH
    Day,
    /// HOUR
    Hour,
    /// MINUTE
    Minute,
    /// SECOND
    Second,
    /// MICROSECOND
    Microsecond,
    /// QUARTER
    Quarter,
    /// WEEK(x[, mode])
    Week,
    /// WEEKOFYEAR (WEEK(x, 3))
    WeekOfYear,
    /// YEARWEEK(x[, mode])
    YearWeek,
    /// DAYOFWEEK (1 = Sunday)
    DayOfWeek,
    /// WEEKDAY (0 = Monday)
    WeekDay,
    /// DAYOFYEAR
    DayOfYear,
    /// DAYNAME
    DayName,
    /// MONTHNAME
    MonthName,
    /// DATE(x)
    Date,
    /// `CAST(x AS DATETIME(fsp))`: the value as a date-time, its
    /// fraction rounded to `fsp` digits.
    CastDateTime(u8),
    /// LAST_DAY
    LastDay,
    /// MAKEDATE(year, dayofyear)
    MakeDate,
    /// FROM_UNIXTIME(n[, fmt])
    FromUnixtime,
    /// TO_DAYS
    ToDays,
    /// FROM_DAYS
    FromDays,
    /// UTC_DATE
    UtcDate,
    /// UTC_TIMESTAMP([fsp])
    UtcTimestamp,
    /// TIME(x)
    Time,
    /// TIME_TO_SEC(t)
    TimeToSec,
    /// SEC_TO_TIME(n)
    SecToTime,
    /// TIMEDIFF(a, b)
    TimeDiff,
    /// ADDTIME(a, t)
    AddTime,
    /// SUBTIME(a, t)
    SubTime,
    /// TIME_FORMAT(t, fmt)
    TimeFormat,
    /// CURTIME([fsp]), CURRENT_TIME, UTC_TIME
    CurTime,
    /// MAKETIME(h, m, s)
    MakeTime,
}

/// The function called `name` (lower-case), for those called with plain
/// arguments.
pub fn by_name(name: &str) -> Option<DtFn> {
    Some(match name {
        "datediff" => DtFn::DateDiff,
        "date_format" => DtFn::DateFormat,
        "str_to_date" => DtFn::StrToDate,
        "year" => DtFn::Year,
        "month" => DtFn::Month,
        "day" | "dayofmonth" => DtFn::Day,
        "hour" => DtFn::Hour,
        "minute" => DtFn::Minute,
        "second" => DtFn::Second,
        "microsecond" => DtFn::Microsecond,
        "quarter" => DtFn::Quarter,
        "week" => DtFn::Week,
        "weekofyear" => DtFn::WeekOfYear,
        "yearweek" => DtFn::YearWeek,
        "dayofweek" => DtFn::DayOfWeek,
        "weekday" => DtFn::WeekDay,
        "dayofyear" => DtFn::DayOfYear,
        "dayname" => DtFn::DayName,
        "monthname" => DtFn::MonthName,
        "date" => DtFn::Date,
        "last_day" => DtFn::LastDay,
        "makedate" => DtFn::MakeDate,
        "from_unixtime" => DtFn::FromUnixtime,
        "to_days" => DtFn::ToDays,
        "from_days" => DtFn::FromDays,
        "utc_date" => DtFn::UtcDate,
        "utc_timestamp" => DtFn::UtcTimestamp,
        "time" => DtFn::Time,
        "time_to_sec" => DtFn::TimeToSec,
        "sec_to_time" => DtFn::SecToTime,
        "timediff" => DtFn::TimeDiff,
        "addtime" => DtFn::AddTime,
        "subtime" => DtFn::SubTime,
        "time_format" => DtFn::TimeFormat,
        "curtime" | "current_time" | "utc_time" => DtFn::CurTime,
        "maketime" => DtFn::MakeTime,
        _ => return None,
    })
}

/// Whether `f` takes `n` arguments.
pub fn arity_ok(f: DtFn, n: usize) -> bool {
    match f {
        DtFn::AddInterval(..) | DtFn::DateDiff | DtFn::DateFormat | DtFn::StrToDate => n == 2,
        DtFn::MakeDate => n == 2,
        DtFn::TimestampDiff(_) => n == 2,
        DtFn::Week | DtFn::YearWeek | DtFn::FromUnixtime => (1..=2).contains(&n),
        DtFn::UtcDate => n == 0,
        DtFn::UtcTimestamp | DtFn::CurTime => n <= 1,
        DtFn::TimeDiff | DtFn::AddTime | DtFn::SubTime | DtFn::TimeFormat => n == 2,
        DtFn::MakeTime => n == 3,
        _ => n == 1,
    }
}

/// The type MySQL reports for `f`'s result, from its arguments' types
/// (`fmt`: STR_TO_DATE's format when it is a constant).
pub fn out_type(
    f: DtFn,
    args: &[crate::output::OutType],
    fmt: Option<&[u8]>,
) -> crate::output::OutType {
    use crate::output::OutType as T;
    match f {
        DtFn::AddInterval(unit, _) => match args.first() {
            Some(T::Date) if unit.is_date_unit() => T::Date,
            Some(T::Time) if !unit.is_date_unit() => T::Time,
            Some(T::Date | T::DateTime | T::Timestamp) => T::DateTime,
            Some(T::Null) => T::Null,
            _ => T::VarString,
        },
        DtFn::StrToDate => match fmt.map(format_parts) {
            Some((true, false)) => T::Date,
            _ => T::DateTime,
        },
        DtFn::Date | DtFn::LastDay | DtFn::MakeDate | DtFn::FromDays | DtFn::UtcDate => T::Date,
        DtFn::FromUnixtime if args.len() > 1 => T::VarString,
        DtFn::FromUnixtime | DtFn::UtcTimestamp => T::DateTime,
        DtFn::DateFormat | DtFn::DayName | DtFn::MonthName | DtFn::TimeFormat => T::VarString,
        DtFn::Time | DtFn::SecToTime | DtFn::TimeDiff | DtFn::CurTime | DtFn::MakeTime => T::Time,
        DtFn::AddTime | DtFn::SubTime => match args.first() {
            Some(T::DateTime | T::Timestamp | T::Date) => T::DateTime,
            Some(T::Time) => T::Time,
            Some(T::Null) => T::Null,
            _ => T::VarString,
        },
        _ => T::LongLong,
    }
}

/// A broken-down date and time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dt {
    y: i64,
    m: u32,
    d: u32,
    h: u32,
    mi: u32,
    s: u32,
    us: u32,
}

impl Dt {
    fn date(y: i64, m: u32, d: u32) -> Dt {
        Dt {
            y,
            m,
            d,
            h: 0,
            mi: 0,
            s: 0,
            us: 0,
        }
    }

    fn is_zero_date(&self) -> bool {
        self.y == 0 && self.m == 0 && self.d == 0
    }

    /// MySQL's day number (TO_DAYS, calc_daynr): days since year 0, in
    /// which year 0 has 365 days.
    fn daynr(&self) -> i64 {
        if self.y == 0 && self.m == 0 {
            return 0;
        }
        let (mut y, m, d) = (self.y, i64::from(self.m), i64::from(self.d));
        let mut delsum = 365 * y + 31 * (m - 1) + d;
        if m <= 2 {
            y -= 1;
        } else {
            delsum -= (m * 4 + 23) / 10;
        }
        let temp = ((y / 100 + 1) * 3) / 4;
        delsum + y / 4 - temp
    }

    fn day_micros(&self) -> i64 {
        ((i64::from(self.h) * 60 + i64::from(self.mi)) * 60 + i64::from(self.s)) * 1_000_000
            + i64::from(self.us)
    }

    fn packed_date(&self) -> i64 {
        pack_date(self.y as u32, self.m, self.d)
    }

    fn value(&self, as_date: bool) -> Value {
        if as_date {
            Value::Date(self.packed_date())
        } else {
            Value::DateTime(pack_datetime(
                self.packed_date(),
                self.h,
                self.mi,
                self.s,
                self.us,
            ))
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day) (Howard Hinnant's
/// algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    (y, m as u32, d as u32)
}

fn leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn days_in_year(y: i64) -> i64 {
    if leap(y) {
        366
    } else {
        365
    }
}

fn valid(dt: &Dt) -> bool {
    if dt.h > 23 || dt.mi > 59 || dt.s > 59 || dt.us > 999_999 {
        return false;
    }
    if dt.is_zero_date() {
        return true;
    }
    (0..=9999).contains(&dt.y)
        && (1..=12).contains(&dt.m)
        && dt.d >= 1
        && dt.d <= days_in_month(dt.y, dt.m)
}

fn two_digit_year(y: i64, digits: usize) -> i64 {
    if digits <= 2 {
        if y < 70 {
            y + 2000
        } else {
            y + 1900
        }
    } else {
        y
    }
}

/// Reads a date or date-time string as MySQL does; the flag says whether
/// it had a time part.
pub fn parse_dt_str(s: &[u8]) -> Option<(Dt, bool)> {
    let t = std::str::from_utf8(s).ok()?.trim();
    if t.is_empty() {
        return None;
    }
    let (whole, frac) = match t.split_once('.') {
        Some((w, f)) if w.bytes().all(|b| b.is_ascii_digit()) => (w, Some(f)),
        _ => (t, None),
    };
    if whole.bytes().all(|b| b.is_ascii_digit()) {
        return parse_digits(whole, frac);
    }
    // Groups of digits with any punctuation between them.
    let mut groups: Vec<(i64, usize)> = Vec::new();
    let mut cur: Option<(i64, usize)> = None;
    for c in t.chars() {
        if let Some(dg) = c.to_digit(10) {
            let (v, n) = cur.unwrap_or((0, 0));
            if n >= 18 {
                return None;
            }
            cur = Some((v * 10 + i64::from(dg), n + 1));
        } else {
            if let Some(g) = cur.take() {
                groups.push(g);
            } else if groups.is_empty() {
                return None;
            }
            if !(c.is_ascii_punctuation() || c.is_whitespace() || c == 'T') {
                return None;
            }
        }
    }
    if let Some(g) = cur {
        groups.push(g);
    }
    if groups.len() < 3 {
        return None;
    }
    let g = |i: usize| groups.get(i).map_or(0, |x| x.0);
    let mut dt = Dt::date(
        two_digit_year(g(0), groups[0].1),
        u32::try_from(g(1)).ok()?,
        u32::try_from(g(2)).ok()?,
    );
    let has_time = groups.len() > 3;
    if has_time {
        dt.h = u32::try_from(g(3)).ok()?;
        dt.mi = u32::try_from(g(4)).ok()?;
        dt.s = u32::try_from(g(5)).ok()?;
        if let Some(&(v, n)) = groups.get(6) {
            dt.us = frac_micros(v, n);
        }
        if groups.len() > 7 {
            return None;
        }
    }
    valid(&dt).then_some((dt, has_time))
}

fn frac_micros(v: i64, n: usize) -> u32 {
    let (mut v, mut n) = (v, n);
    while n > 6 {
        v /= 10;
        n -= 1;
    }
    while n < 6 {
        v *= 10;
        n += 1;
    }
    v as u32
}

/// `YYYYMMDD`, `YYMMDD`, `YYYYMMDDHHMMSS`, `YYMMDDHHMMSS` (with an
/// optional fraction after the seconds).
fn parse_digits(w: &str, frac: Option<&str>) -> Option<(Dt, bool)> {
    let n = |a: usize, b: usize| -> Option<i64> { w.get(a..b)?.parse().ok() };
    let (dt, has_time) = match w.len() {
        8 => (Dt::date(n(0, 4)?, n(4, 6)? as u32, n(6, 8)? as u32), false),
        6 => (
            Dt::date(
                two_digit_year(n(0, 2)?, 2),
                n(2, 4)? as u32,
                n(4, 6)? as u32,
            ),
            false,
        ),
        14 | 12 => {
            let yl = w.len() - 10;
            let y = n(0, yl)?;
            let y = if yl == 2 { two_digit_year(y, 2) } else { y };
            let mut dt = Dt::date(y, n(yl, yl + 2)? as u32, n(yl + 2, yl + 4)? as u32);
            dt.h = n(yl + 4, yl + 6)? as u32;
            dt.mi = n(yl + 6, yl + 8)? as u32;
            dt.s = n(yl + 8, yl + 10)? as u32;
            if let Some(f) = frac.filter(|f| !f.is_empty()) {
                let digits: String = f.chars().take(6).collect();
                dt.us = frac_micros(digits.parse().ok()?, digits.len());
            }
            (dt, true)
        }
        _ => return None,
    };
    valid(&dt).then_some((dt, has_time))
}

/// A value read as a date-time: None for NULL; Err(text) when it is not
/// one. The flag says whether it carries a time (a DATETIME, or a string
/// with a time part).
fn read(v: &Value) -> Option<Result<(Dt, bool), String>> {
    Some(match v {
        Value::Null => return None,
        Value::Date(p) => {
            let (y, m, d) = unpack_date(*p);
            Ok((Dt::date(i64::from(y), m, d), false))
        }
        Value::DateTime(p) => {
            let (date, h, mi, s, us) = unpack_datetime(*p);
            let (y, m, d) = unpack_date(date);
            Ok((
                Dt {
                    y: i64::from(y),
                    m,
                    d,
                    h,
                    mi,
                    s,
                    us,
                },
                true,
            ))
        }
        Value::Int(_) | Value::UInt(_) | Value::Decimal(..) | Value::Double(_) => {
            let t = v.to_string();
            let (w, f) = t.split_once('.').unwrap_or((&t, ""));
            let w = w.trim_start_matches('-');
            // A number of up to 8 digits is a date, longer a date-time;
            // short ones are zero-padded as MySQL does.
            let padded = match w.len() {
                0..=6 if w != "0" => format!("{w:0>6}"),
                7 | 8 => format!("{w:0>8}"),
                9..=12 => format!("{w:0>12}"),
                13 | 14 => format!("{w:0>14}"),
                _ => w.to_string(),
            };
            if w == "0" {
                return Some(Ok((Dt::date(0, 0, 0), false)));
            }
            match parse_digits(&padded, Some(f)) {
                Some(r) if !t.starts_with('-') => Ok(r),
                _ => Err(t),
            }
        }
        Value::Str(s) => parse_dt_str(s).ok_or_else(|| String::from_utf8_lossy(s).into_owned()),
        Value::Member(_, s) => {
            parse_dt_str(s).ok_or_else(|| String::from_utf8_lossy(s).into_owned())
        }
        Value::Json(b) => {
            let t = crate::json::unquoted_text(b);
            parse_dt_str(t.as_bytes()).ok_or(t)
        }
        // A TIME read as a date-time: its time of day on the zero date.
        Value::Time(us) => {
            let a = us.rem_euclid(86_400_000_000);
            Ok((
                Dt {
                    y: 0,
                    m: 0,
                    d: 0,
                    h: (a / 3_600_000_000) as u32,
                    mi: ((a / 60_000_000) % 60) as u32,
                    s: ((a / 1_000_000) % 60) as u32,
                    us: (a % 1_000_000) as u32,
                },
                true,
            ))
        }
    })
}

/// A TIME argument (signed microseconds), clamped to +-838:59:59 with
/// warning 1292 when beyond; None (warning 1292) for what is no time.
fn time_arg(v: &Value, env: &dyn Env) -> Option<i64> {
    match crate::convert::time_of_value(v) {
        Some(us) if us.abs() > crate::types::TIME_MAX_MICROS => {
            env.warn(1292, format!("Truncated incorrect time value: '{v}'"));
            Some(us.clamp(
                -crate::types::TIME_MAX_MICROS,
                crate::types::TIME_MAX_MICROS,
            ))
        }
        Some(us) => Some(us),
        None => {
            env.warn(1292, format!("Truncated incorrect time value: '{v}'"));
            None
        }
    }
}

/// A TIME result, clamped with warning 1292.
fn time_result(us: i128, env: &dyn Env) -> Value {
    let max = i128::from(crate::types::TIME_MAX_MICROS);
    if us.abs() > max {
        let shown = crate::types::format_time(us.clamp(-max * 10, max * 10) as i64, None);
        env.warn(1292, format!("Truncated incorrect time value: '{shown}'"));
    }
    Value::Time(us.clamp(-max, max) as i64)
}

/// Whether `v` is a date-time (not a time) for TIMEDIFF and ADDTIME.
fn is_datetime_arg(v: &Value) -> bool {
    match v {
        Value::Date(_) | Value::DateTime(_) => true,
        Value::Str(s) | Value::Member(_, s) => {
            let t = String::from_utf8_lossy(s);
            let t = t.trim();
            t.len() >= 8 && t.as_bytes().get(4) == Some(&b'-') && parse_dt_str(s).is_some()
        }
        _ => false,
    }
}

/// The date-time `us` microseconds after 1970-01-01 (UTC).
fn dt_of_unix_micros(us: i128) -> Option<Dt> {
    let days = i64::try_from(us.div_euclid(86_400_000_000)).ok()?;
    let rem = us.rem_euclid(86_400_000_000) as i64;
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return None;
    }
    Some(Dt {
        y,
        m,
        d,
        h: (rem / 3_600_000_000) as u32,
        mi: ((rem / 60_000_000) % 60) as u32,
        s: ((rem / 1_000_000) % 60) as u32,
        us: (rem % 1_000_000) as u32,
    })
}

fn bad_value(env: &dyn Env, text: &str) -> Value {
    env.warn(1292, format!("Incorrect datetime value: '{text}'"));
    Value::Null
}

/// A time-only string `[-]h:m[:s[.f]]` (for HOUR and friends of a string
/// that is not a date).
fn parse_time_str(s: &[u8]) -> Option<(u32, u32, u32, u32)> {
    let t = std::str::from_utf8(s).ok()?.trim();
    let (hms, frac) = t.split_once('.').unwrap_or((t, ""));
    let mut it = hms.split(':');
    let h: u32 = it.next()?.trim_start_matches('-').parse().ok()?;
    let mi: u32 = it.next()?.parse().ok()?;
    let s: u32 = it.next().unwrap_or("0").parse().ok()?;
    if it.next().is_some() || mi > 59 || s > 59 || h > 838 {
        return None;
    }
    let us = if frac.is_empty() {
        0
    } else {
        let d: String = frac.chars().take(6).collect();
        frac_micros(d.parse().ok()?, d.len())
    };
    Some((h, mi, s, us))
}

/// An interval: months, or microseconds, and its sign.
struct Interval {
    months: i64,
    micros: i128,
}

/// Reads `INTERVAL v unit` (negated when `neg`).
fn interval(unit: Unit, v: &Value, neg: bool) -> Option<Interval> {
    let sign: i128 = if neg { -1 } else { 1 };
    let simple = |mul: i128| -> Option<Interval> {
        let n = i128::from(to_i64(v)?);
        Some(Interval {
            months: 0,
            micros: n.checked_mul(mul)?.checked_mul(sign)?,
        })
    };
    const SEC: i128 = 1_000_000;
    match unit {
        Unit::Microsecond => simple(1),
        Unit::Second => {
            let us: i128 = match v {
                Value::Int(i) => i128::from(*i) * SEC,
                Value::UInt(u) => i128::from(*u) * SEC,
                Value::Decimal(d, s) => {
                    let s = u32::from(*s);
                    if s <= 6 {
                        d.checked_mul(10i128.pow(6 - s))?
                    } else {
                        d / 10i128.pow(s - 6)
                    }
                }
                other => (num_f64(other)? * 1e6).round() as i128,
            };
            Some(Interval {
                months: 0,
                micros: us * sign,
            })
        }
        Unit::Minute => simple(60 * SEC),
        Unit::Hour => simple(3600 * SEC),
        Unit::Day => simple(86_400 * SEC),
        Unit::Week => simple(7 * 86_400 * SEC),
        Unit::Month | Unit::Quarter | Unit::Year => {
            let n = to_i64(v)?;
            let per = match unit {
                Unit::Month => 1,
                Unit::Quarter => 3,
                _ => 12,
            };
            Some(Interval {
                months: n.checked_mul(per)?.checked_mul(sign as i64)?,
                micros: 0,
            })
        }
        _ => {
            let (count, micro_last) = unit.fields();
            let text = text_of(v);
            let mut i = 0;
            while i < text.len() && text[i].is_ascii_whitespace() {
                i += 1;
            }
            let mut sign = sign;
            if text.get(i) == Some(&b'-') {
                sign = -sign;
                i += 1;
            }
            while i < text.len() && !text[i].is_ascii_digit() {
                i += 1;
            }
            let mut vals = vec![0i128; count];
            let mut msec_len = 0i64;
            let mut k = 0;
            while k < count {
                let start = i;
                let mut val: i128 = 0;
                while i < text.len() && text[i].is_ascii_digit() {
                    val = val.saturating_mul(10) + i128::from(text[i] - b'0');
                    i += 1;
                }
                msec_len = 6 - (i - start) as i64;
                vals[k] = val;
                while i < text.len() && !text[i].is_ascii_digit() {
                    i += 1;
                }
                if i >= text.len() && k != count - 1 {
                    let read = k + 1;
                    vals.rotate_right(count - read);
                    for x in vals.iter_mut().take(count - read) {
                        *x = 0;
                    }
                    break;
                }
                k += 1;
            }
            if micro_last && msec_len > 0 {
                if let Some(last) = vals.last_mut() {
                    *last *= 10i128.pow(msec_len as u32);
                }
            }
            if unit == Unit::YearMonth {
                let m = vals[0].checked_mul(12)?.checked_add(vals[1])?;
                return Some(Interval {
                    months: i64::try_from(m * sign).ok()?,
                    micros: 0,
                });
            }
            // Weights of the fields, most significant first.
            let all: [i128; 5] = [86_400 * SEC, 3600 * SEC, 60 * SEC, SEC, 1];
            let first = match unit {
                Unit::DayHour | Unit::DayMinute | Unit::DaySecond | Unit::DayMicrosecond => 0,
                Unit::HourMinute | Unit::HourSecond | Unit::HourMicrosecond => 1,
                Unit::MinuteSecond | Unit::MinuteMicrosecond => 2,
                _ => 3,
            };
            let weights: Vec<i128> = if micro_last {
                all[first..].to_vec()
            } else {
                all[first..first + count].to_vec()
            };
            let mut us: i128 = 0;
            for (x, w) in vals.iter().zip(weights) {
                us = us.checked_add(x.checked_mul(w)?)?;
            }
            Some(Interval {
                months: 0,
                micros: us * sign,
            })
        }
    }
}

fn add(dt: Dt, iv: &Interval) -> Option<Dt> {
    if iv.months != 0 {
        let total = dt.y.checked_mul(12)? + i64::from(dt.m) - 1 + iv.months;
        let y = total.div_euclid(12);
        let m = (total.rem_euclid(12) + 1) as u32;
        if !(0..=9999).contains(&y) {
            return None;
        }
        let d = dt.d.min(days_in_month(y, m));
        return Some(Dt { y, m, d, ..dt });
    }
    let base = i128::from(dt.daynr() - 719_528) * 86_400_000_000 + i128::from(dt.day_micros());
    let t = base.checked_add(iv.micros)?;
    let days = i64::try_from(t.div_euclid(86_400_000_000)).ok()?;
    let rem = t.rem_euclid(86_400_000_000) as i64;
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return None;
    }
    Some(Dt {
        y,
        m,
        d,
        h: (rem / 3_600_000_000) as u32,
        mi: ((rem / 60_000_000) % 60) as u32,
        s: ((rem / 1_000_000) % 60) as u32,
        us: (rem % 1_000_000) as u32,
    })
}

/// `(week, year)` of a date under MySQL's week behaviour bits.
fn calc_week(dt: &Dt, behaviour: u32) -> (i64, i64) {
    const MONDAY_FIRST: u32 = 1;
    const WEEK_YEAR: u32 = 2;
    const FIRST_WEEKDAY: u32 = 4;
    let daynr = dt.daynr();
    let mut first_daynr = Dt::date(dt.y, 1, 1).daynr();
    let monday_first = behaviour & MONDAY_FIRST != 0;
    let mut week_year = behaviour & WEEK_YEAR != 0;
    let first_weekday = behaviour & FIRST_WEEKDAY != 0;
    let mut weekday = weekday_of(first_daynr, !monday_first);
    let mut year = dt.y;
    if dt.m == 1 && i64::from(dt.d) <= 7 - weekday {
        if !week_year && ((first_weekday && weekday != 0) || (!first_weekday && weekday >= 4)) {
            return (0, year);
        }
        week_year = true;
        year -= 1;
        let days = days_in_year(year);
        first_daynr -= days;
        weekday = (weekday + 53 * 7 - days).rem_euclid(7);
    }
    let days = if (first_weekday && weekday != 0) || (!first_weekday && weekday >= 4) {
        daynr - (first_daynr + (7 - weekday))
    } else {
        daynr - (first_daynr - weekday)
    };
    if week_year && days >= 52 * 7 {
        let wd = (weekday + days_in_year(year)) % 7;
        if (!first_weekday && wd < 4) || (first_weekday && wd == 0) {
            return (1, year + 1);
        }
    }
    (days / 7 + 1, year)
}

/// MySQL's calc_weekday: 0 = Monday (or Sunday when `sunday_first`).
fn weekday_of(daynr: i64, sunday_first: bool) -> i64 {
    (daynr + 5 + i64::from(sunday_first)).rem_euclid(7)
}

/// The behaviour bits of WEEK()'s `mode`.
fn week_mode(mode: i64) -> u32 {
    let mut f = (mode & 7) as u32;
    if f & 1 == 0 {
        f ^= 4;
    }
    f
}

const DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn month_name(m: u32) -> &'static str {
    MONTH_NAMES
        .get((m as usize).wrapping_sub(1))
        .copied()
        .unwrap_or("")
}

fn suffix(d: u32) -> &'static str {
    match (d % 100, d % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    }
}

/// DATE_FORMAT's output for `dt` and `fmt`.
pub fn format(dt: &Dt, fmt: &[u8]) -> Vec<u8> {
    let mut out = String::new();
    let fmt = String::from_utf8_lossy(fmt);
    let mut it = fmt.chars();
    let h12 = |h: u32| if h.is_multiple_of(12) { 12 } else { h % 12 };
    let wd = weekday_of(dt.daynr(), false) as usize;
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(f) = it.next() else {
            break;
        };
        use std::fmt::Write;
        let _ = match f {
            'a' => write!(out, "{}", DAY_NAMES[wd].get(..3).unwrap_or("")),
            'b' => write!(out, "{}", month_name(dt.m).get(..3).unwrap_or("")),
            'c' => write!(out, "{}", dt.m),
            'D' => write!(out, "{}{}", dt.d, suffix(dt.d)),
            'd' => write!(out, "{:02}", dt.d),
            'e' => write!(out, "{}", dt.d),
            'f' => write!(out, "{:06}", dt.us),
            'H' => write!(out, "{:02}", dt.h),
            'h' | 'I' => write!(out, "{:02}", h12(dt.h)),
            'i' => write!(out, "{:02}", dt.mi),
            'j' => write!(out, "{:03}", dt.daynr() - Dt::date(dt.y, 1, 1).daynr() + 1),
            'k' => write!(out, "{}", dt.h),
            'l' => write!(out, "{}", h12(dt.h)),
            'M' => write!(out, "{}", month_name(dt.m)),
            'm' => write!(out, "{:02}", dt.m),
            'p' => write!(out, "{}", if dt.h < 12 { "AM" } else { "PM" }),
            'r' => write!(
                out,
                "{:02}:{:02}:{:02} {}",
                h12(dt.h),
                dt.mi,
                dt.s,
                if dt.h < 12 { "AM" } else { "PM" }
            ),
            'S' | 's' => write!(out, "{:02}", dt.s),
            'T' => write!(out, "{:02}:{:02}:{:02}", dt.h, dt.mi, dt.s),
            'U' => write!(out, "{:02}", calc_week(dt, 4).0),
            'u' => write!(out, "{:02}", calc_week(dt, 1).0),
            'V' => write!(out, "{:02}", calc_week(dt, 2 | 4).0),
            'v' => write!(out, "{:02}", calc_week(dt, 2 | 1).0),
            'X' => write!(out, "{:04}", calc_week(dt, 2 | 4).1),
            'x' => write!(out, "{:04}", calc_week(dt, 2 | 1).1),
            'W' => write!(out, "{}", DAY_NAMES[wd]),
            'w' => write!(out, "{}", weekday_of(dt.daynr(), true)),
            'Y' => write!(out, "{:04}", dt.y),
            'y' => write!(out, "{:02}", dt.y % 100),
            other => write!(out, "{other}"),
        };
    }
    out.into_bytes()
}

/// STR_TO_DATE: the date-time read from `s` by `fmt`, and which parts
/// the format names (date, time).
fn str_to_date(s: &[u8], fmt: &[u8]) -> Option<Dt> {
    let s = String::from_utf8_lossy(s);
    let fmt = String::from_utf8_lossy(fmt);
    let s: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut dt = Dt::date(0, 0, 0);
    let mut pm: Option<bool> = None;
    let mut yday: Option<i64> = None;
    let num = |i: &mut usize, max: usize| -> Option<(i64, usize)> {
        let start = *i;
        while *i < s.len() && *i - start < max && s[*i].is_ascii_digit() {
            *i += 1;
        }
        if *i == start {
            return None;
        }
        let t: String = s[start..*i].iter().collect();
        Some((t.parse().ok()?, *i - start))
    };
    let word = |i: &mut usize, names: &[&str], abbr: bool| -> Option<usize> {
        let rest: String = s[*i..].iter().collect::<String>().to_lowercase();
        for (k, n) in names.iter().enumerate() {
            let n = n.to_lowercase();
            let n = if abbr { n.get(..3)?.to_string() } else { n };
            if rest.starts_with(&n) {
                *i += n.chars().count();
                return Some(k);
            }
        }
        None
    };
    let mut f = fmt.chars().peekable();
    while let Some(c) = f.next() {
        if c.is_whitespace() {
            while i < s.len() && s[i].is_whitespace() {
                i += 1;
            }
            continue;
        }
        if c != '%' {
            if s.get(i) != Some(&c) {
                return None;
            }
            i += 1;
            continue;
        }
        let spec = f.next()?;
        while i < s.len() && s[i].is_whitespace() && spec != '%' {
            i += 1;
        }
        match spec {
            'Y' => {
                let (v, n) = num(&mut i, 4)?;
                dt.y = two_digit_year(v, n);
            }
            'y' => dt.y = two_digit_year(num(&mut i, 2)?.0, 2),
            'm' | 'c' => dt.m = num(&mut i, 2)?.0 as u32,
            'd' | 'e' => dt.d = num(&mut i, 2)?.0 as u32,
            'D' => {
                dt.d = num(&mut i, 2)?.0 as u32;
                i = (i + 2).min(s.len());
            }
            'H' | 'k' | 'h' | 'I' | 'l' => dt.h = num(&mut i, 2)?.0 as u32,
            'i' => dt.mi = num(&mut i, 2)?.0 as u32,
            'S' | 's' => dt.s = num(&mut i, 2)?.0 as u32,
            'f' => {
                let (v, n) = num(&mut i, 6)?;
                dt.us = frac_micros(v, n);
            }
            'p' => {
                let rest: String = s[i..].iter().take(2).collect::<String>().to_uppercase();
                pm = Some(match rest.as_str() {
                    "AM" => false,
                    "PM" => true,
                    _ => return None,
                });
                i += 2;
            }
            'M' => dt.m = word(&mut i, &MONTH_NAMES, false)? as u32 + 1,
            'b' => dt.m = word(&mut i, &MONTH_NAMES, true)? as u32 + 1,
            'W' => {
                word(&mut i, &DAY_NAMES, false)?;
            }
            'a' => {
                word(&mut i, &DAY_NAMES, true)?;
            }
            'j' => yday = Some(num(&mut i, 3)?.0),
            'T' => {
                dt.h = num(&mut i, 2)?.0 as u32;
                (s.get(i) == Some(&':')).then_some(())?;
                i += 1;
                dt.mi = num(&mut i, 2)?.0 as u32;
                (s.get(i) == Some(&':')).then_some(())?;
                i += 1;
                dt.s = num(&mut i, 2)?.0 as u32;
            }
            'r' => {
                dt.h = num(&mut i, 2)?.0 as u32;
                (s.get(i) == Some(&':')).then_some(())?;
                i += 1;
                dt.mi = num(&mut i, 2)?.0 as u32;
                (s.get(i) == Some(&':')).then_some(())?;
                i += 1;
                dt.s = num(&mut i, 2)?.0 as u32;
                while i < s.len() && s[i].is_whitespace() {
                    i += 1;
                }
                let rest: String = s[i..].iter().take(2).collect::<String>().to_uppercase();
                pm = Some(rest == "PM");
                i += 2;
            }
            '%' => {
                if s.get(i) != Some(&'%') {
                    return None;
                }
                i += 1;
            }
            _ => return None,
        }
    }
    if let Some(pm) = pm {
        if dt.h == 0 || dt.h > 12 {
            return None;
        }
        dt.h = dt.h % 12 + if pm { 12 } else { 0 };
    }
    if let Some(n) = yday {
        if n < 1 || n > days_in_year(dt.y) {
            return None;
        }
        let (y, m, d) = civil_from_days(days_from_civil(dt.y, 1, 1) + n - 1);
        dt.y = y;
        dt.m = m;
        dt.d = d;
    }
    // NO_ZERO_IN_DATE / NO_ZERO_DATE (on by default): no zero parts.
    if dt.m == 0 || dt.d == 0 {
        return None;
    }
    valid(&dt).then_some(dt)
}

/// Which parts a STR_TO_DATE format names: (date, time).
pub fn format_parts(fmt: &[u8]) -> (bool, bool) {
    let (mut date, mut time) = (false, false);
    let mut it = fmt.iter();
    while let Some(&c) = it.next() {
        if c == b'%' {
            match it.next() {
                Some(b'Y' | b'y' | b'm' | b'c' | b'd' | b'e' | b'D' | b'M' | b'b' | b'j') => {
                    date = true
                }
                Some(
                    b'H' | b'k' | b'h' | b'I' | b'l' | b'i' | b'S' | b's' | b'f' | b'p' | b'T'
                    | b'r',
                ) => time = true,
                _ => {}
            }
        }
    }
    (date, time)
}

/// The current UTC time, truncated to `fsp` fractional digits.
pub fn now(fsp: u32) -> Dt {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs() as i64;
    let p = 10u32.pow(6 - fsp.min(6));
    let us = now.subsec_micros() / p * p;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    Dt {
        y,
        m,
        d,
        h: (rem / 3600) as u32,
        mi: ((rem / 60) % 60) as u32,
        s: (rem % 60) as u32,
        us,
    }
}

/// The current date-time value (NOW, UTC_TIMESTAMP, CURRENT_TIMESTAMP(n)).
pub fn now_value(fsp: u32) -> Value {
    now(fsp).value(false)
}

/// A TIME (signed microseconds) as a date-time: today's midnight plus
/// the time, days carried, as MySQL reads a TIME where a date-time is
/// needed.
fn time_on_today(t: i64) -> Option<Dt> {
    let midnight = Dt {
        h: 0,
        mi: 0,
        s: 0,
        us: 0,
        ..now(0)
    };
    dt_of_unix_micros(unix_micros(&midnight) + i128::from(t))
}

/// The current date (CURDATE, UTC_DATE).
pub fn today_value() -> Value {
    now(0).value(true)
}

/// Seconds since the epoch of `dt` (UTC), with its microseconds.
fn unix_micros(dt: &Dt) -> i128 {
    i128::from(dt.daynr() - 719_528) * 86_400_000_000 + i128::from(dt.day_micros())
}

/// UNIX_TIMESTAMP(x): 0 before the epoch or for a bad value (with
/// warning 1292), NULL for NULL; a decimal when `x` has microseconds.
pub fn unix_timestamp(v: &Value, env: &dyn Env) -> Value {
    match read(v) {
        None => Value::Null,
        Some(Err(t)) => {
            bad_value(env, &t);
            Value::Int(0)
        }
        Some(Ok((dt, _))) => {
            let us = unix_micros(&dt);
            if us < 0 || dt.is_zero_date() {
                return Value::Int(0);
            }
            if dt.us == 0 {
                Value::Int((us / 1_000_000) as i64)
            } else {
                Value::Decimal(us, 6)
            }
        }
    }
}

/// The argument as a date (the date functions that need a whole date:
/// a zero date or a zero part is NULL with warning 1292).
fn full_date(v: &Value, env: &dyn Env) -> Option<(Dt, bool)> {
    match read(v)? {
        Ok((dt, t)) if !dt.is_zero_date() => Some((dt, t)),
        Ok(_) => {
            bad_value(
                env,
                &text_of(v).iter().map(|&b| b as char).collect::<String>(),
            );
            None
        }
        Err(t) => {
            bad_value(env, &t);
            None
        }
    }
}

/// Evaluates the date function `f` over evaluated `a`.
pub fn call(f: DtFn, a: Vec<Value>, env: &dyn Env) -> SqlResult<Value> {
    let arg = |i: usize| a.get(i).cloned().unwrap_or(Value::Null);
    match f {
        DtFn::UtcDate => return Ok(today_value()),
        DtFn::UtcTimestamp => {
            let fsp = a.first().and_then(to_i64).unwrap_or(0).clamp(0, 6) as u32;
            return Ok(now_value(fsp));
        }
        DtFn::CurTime => {
            let fsp = a.first().and_then(to_i64).unwrap_or(0).clamp(0, 6) as u32;
            return Ok(Value::Time(now(fsp).day_micros()));
        }
        _ => {}
    }
    if a.iter().any(Value::is_null) && !matches!(f, DtFn::Week | DtFn::YearWeek) {
        return Ok(Value::Null);
    }
    let int = Value::Int;
    Ok(match f {
        DtFn::AddInterval(unit, neg) => {
            let x = arg(0);
            // A TIME plus a time interval is a TIME.
            if let (Value::Time(t), false) = (&x, unit.is_date_unit()) {
                return Ok(match interval(unit, &arg(1), neg) {
                    Some(iv) if iv.months == 0 => time_result(i128::from(*t) + iv.micros, env),
                    _ => Value::Null,
                });
            }
            let (dt, has_time) = match read(&x) {
                None => return Ok(Value::Null),
                Some(Err(t)) => return Ok(bad_value(env, &t)),
                Some(Ok(r)) => r,
            };
            if dt.is_zero_date() {
                return Ok(bad_value(env, &x.to_string()));
            }
            let Some(iv) = interval(unit, &arg(1), neg) else {
                return Ok(Value::Null);
            };
            let Some(r) = add(dt, &iv) else {
                env.warn(1441, "Datetime function: datetime field overflow".into());
                return Ok(Value::Null);
            };
            let as_date = unit.is_date_unit() && !has_time;
            match x {
                Value::Date(_) | Value::DateTime(_) => r.value(as_date),
                _ => Value::Str(r.value(as_date).to_string().into_bytes()),
            }
        }
        DtFn::TimestampDiff(unit) => {
            let (Some((a0, _)), Some((b0, _))) = (full_date(&arg(0), env), full_date(&arg(1), env))
            else {
                return Ok(Value::Null);
            };
            let (ua, ub) = (unix_micros(&a0), unix_micros(&b0));
            let per: i128 = match unit {
                Unit::Microsecond => 1,
                Unit::Second => 1_000_000,
                Unit::Minute => 60_000_000,
                Unit::Hour => 3_600_000_000,
                Unit::Day => 86_400_000_000,
                Unit::Week => 7 * 86_400_000_000,
                Unit::Month | Unit::Quarter | Unit::Year => 0,
                _ => {
                    return Err(crate::error::SqlError::syntax(
                        "TIMESTAMPDIFF takes a simple unit",
                    ))
                }
            };
            if per > 0 {
                return Ok(int(((ub - ua) / per) as i64));
            }
            let (lo, hi, sign) = if ub >= ua { (a0, b0, 1) } else { (b0, a0, -1) };
            let mut months = (hi.y - lo.y) * 12 + i64::from(hi.m) - i64::from(lo.m);
            if (hi.d, hi.day_micros()) < (lo.d, lo.day_micros()) {
                months -= 1;
            }
            let n = match unit {
                Unit::Month => months,
                Unit::Quarter => months / 3,
                _ => months / 12,
            };
            int(n * sign)
        }
        DtFn::DateDiff => {
            let (Some((a0, _)), Some((b0, _))) = (full_date(&arg(0), env), full_date(&arg(1), env))
            else {
                return Ok(Value::Null);
            };
            int(a0.daynr() - b0.daynr())
        }
        DtFn::FromDays => {
            let n = to_i64(&arg(0)).unwrap_or(0);
            if !(366..=3_652_424).contains(&n) {
                return Ok(Value::Date(0));
            }
            let (y, m, d) = civil_from_days(n - 719_528);
            Dt::date(y, m, d).value(true)
        }
        DtFn::MakeDate => {
            let (y, n) = (to_i64(&arg(0)).unwrap_or(0), to_i64(&arg(1)).unwrap_or(0));
            if y < 0 || n <= 0 || y > 9999 {
                return Ok(Value::Null);
            }
            let y = if y < 100 { two_digit_year(y, 2) } else { y };
            let (y, m, d) = civil_from_days(days_from_civil(y, 1, 1) + n - 1);
            if y > 9999 {
                return Ok(Value::Null);
            }
            Dt::date(y, m, d).value(true)
        }
        DtFn::FromUnixtime => {
            let us: i128 = match arg(0) {
                Value::Int(i) => i128::from(i) * 1_000_000,
                Value::UInt(u) => i128::from(u) * 1_000_000,
                Value::Decimal(d, s) => {
                    let s = u32::from(s);
                    if s <= 6 {
                        d * 10i128.pow(6 - s)
                    } else {
                        d / 10i128.pow(s - 6)
                    }
                }
                v => (num_f64(&v).unwrap_or(-1.0) * 1e6).round() as i128,
            };
            // MySQL's range: up to 32536771199.999999 (3001-01-19 03:14:07 UTC).
            if !(0..=32_536_771_199_999_999).contains(&us) {
                return Ok(Value::Null);
            }
            let days = (us / 86_400_000_000) as i64;
            let rem = (us % 86_400_000_000) as i64;
            let (y, m, d) = civil_from_days(days);
            let dt = Dt {
                y,
                m,
                d,
                h: (rem / 3_600_000_000) as u32,
                mi: ((rem / 60_000_000) % 60) as u32,
                s: ((rem / 1_000_000) % 60) as u32,
                us: (rem % 1_000_000) as u32,
            };
            if a.len() > 1 {
                Value::Str(format(&dt, &text_of(&arg(1))))
            } else {
                dt.value(false)
            }
        }
        DtFn::StrToDate => {
            let (s, fmt) = (text_of(&arg(0)), text_of(&arg(1)));
            match str_to_date(&s, &fmt) {
                Some(dt) => {
                    let (date, time) = format_parts(&fmt);
                    if date && !time {
                        dt.value(true)
                    } else {
                        dt.value(false)
                    }
                }
                None => {
                    env.warn(
                        1411,
                        format!(
                            "Incorrect datetime value: '{}' for function str_to_date",
                            String::from_utf8_lossy(&s)
                        ),
                    );
                    Value::Null
                }
            }
        }
        DtFn::Time => match time_arg(&arg(0), env) {
            Some(us) => Value::Time(us),
            None => Value::Null,
        },
        DtFn::TimeToSec => match time_arg(&arg(0), env) {
            Some(us) => int(us / 1_000_000),
            None => Value::Null,
        },
        DtFn::SecToTime => {
            let x = arg(0);
            let us: i128 = match &x {
                Value::Int(i) => i128::from(*i) * 1_000_000,
                Value::UInt(u) => i128::from(*u) * 1_000_000,
                Value::Decimal(d, sc) => {
                    let sc = u32::from(*sc);
                    if sc <= 6 {
                        d * 10i128.pow(6 - sc)
                    } else {
                        d / 10i128.pow(sc - 6)
                    }
                }
                v => (num_f64(v).unwrap_or(0.0) * 1e6).round() as i128,
            };
            time_result(us, env)
        }
        DtFn::MakeTime => {
            let (h, m) = (to_i64(&arg(0)).unwrap_or(0), to_i64(&arg(1)).unwrap_or(-1));
            let sec = num_f64(&arg(2)).unwrap_or(-1.0);
            if !(0..60).contains(&m) || !(0.0..60.0).contains(&sec) {
                return Ok(Value::Null);
            }
            let mag = (i128::from(h.unsigned_abs()) * 3600 + i128::from(m) * 60) * 1_000_000
                + (sec * 1e6).round() as i128;
            time_result(if h < 0 { -mag } else { mag }, env)
        }
        DtFn::TimeDiff => {
            let (x, y) = (arg(0), arg(1));
            match (is_datetime_arg(&x), is_datetime_arg(&y)) {
                (true, true) => {
                    let (Some(Ok((p, _))), Some(Ok((q, _)))) = (read(&x), read(&y)) else {
                        return Ok(Value::Null);
                    };
                    time_result(unix_micros(&p) - unix_micros(&q), env)
                }
                (false, false) => match (time_arg(&x, env), time_arg(&y, env)) {
                    (Some(p), Some(q)) => time_result(i128::from(p) - i128::from(q), env),
                    _ => Value::Null,
                },
                // A date-time and a time: MySQL's NULL.
                _ => Value::Null,
            }
        }
        DtFn::AddTime | DtFn::SubTime => {
            let (x, y) = (arg(0), arg(1));
            if is_datetime_arg(&y) {
                return Ok(Value::Null);
            }
            let Some(d) = time_arg(&y, env) else {
                return Ok(Value::Null);
            };
            let d = i128::from(if f == DtFn::SubTime { -d } else { d });
            if is_datetime_arg(&x) {
                let Some(Ok((p, _))) = read(&x) else {
                    return Ok(Value::Null);
                };
                let Some(r) = dt_of_unix_micros(unix_micros(&p) + d) else {
                    return Ok(Value::Null);
                };
                match x {
                    Value::Date(_) | Value::DateTime(_) => r.value(false),
                    _ => Value::Str(r.value(false).to_string().into_bytes()),
                }
            } else {
                let Some(t) = time_arg(&x, env) else {
                    return Ok(Value::Null);
                };
                let r = time_result(i128::from(t) + d, env);
                match x {
                    Value::Time(_) => r,
                    _ => Value::Str(r.to_string().into_bytes()),
                }
            }
        }
        DtFn::TimeFormat => {
            let Some(us) = time_arg(&arg(0), env) else {
                return Ok(Value::Null);
            };
            let a = us.unsigned_abs();
            let secs = a / 1_000_000;
            let dt = Dt {
                y: 0,
                m: 0,
                d: 0,
                h: (secs / 3600) as u32,
                mi: ((secs / 60) % 60) as u32,
                s: (secs % 60) as u32,
                us: (a % 1_000_000) as u32,
            };
            let mut out = if us < 0 { b"-".to_vec() } else { Vec::new() };
            out.extend(format(&dt, &text_of(&arg(1))));
            Value::Str(out)
        }
        DtFn::Hour | DtFn::Minute | DtFn::Second | DtFn::Microsecond => {
            let x = arg(0);
            // A string that reads as a time is one ('10:05:03' is not
            // 2010-05-03); a TIME's hour may exceed 23.
            let time = match &x {
                Value::Str(s) => parse_time_str(s),
                Value::Time(us) => {
                    let a = us.unsigned_abs();
                    let secs = a / 1_000_000;
                    Some((
                        (secs / 3600) as u32,
                        ((secs / 60) % 60) as u32,
                        (secs % 60) as u32,
                        (a % 1_000_000) as u32,
                    ))
                }
                _ => None,
            };
            let parts = match (time, read(&x)) {
                (Some(t), _) => Some(t),
                (None, Some(Ok((dt, _)))) => Some((dt.h, dt.mi, dt.s, dt.us)),
                _ => None,
            };
            let Some((h, mi, s, us)) = parts else {
                return Ok(bad_value(env, &x.to_string()));
            };
            int(i64::from(match f {
                DtFn::Hour => h,
                DtFn::Minute => mi,
                DtFn::Second => s,
                _ => us,
            }))
        }
        DtFn::Extract(unit) => {
            let x = arg(0);
            // The parts of a TIME carry its sign; its hours may pass 23.
            if let Value::Time(t) = x {
                let sign = if t < 0 { -1 } else { 1 };
                let a = t.unsigned_abs();
                let secs = (a / 1_000_000) as i64;
                let (h, mi, s, us) = (
                    secs / 3600,
                    (secs / 60) % 60,
                    secs % 60,
                    (a % 1_000_000) as i64,
                );
                let part = match unit {
                    Unit::Hour => Some(h),
                    Unit::Minute => Some(mi),
                    Unit::Second => Some(s),
                    Unit::Microsecond => Some(us),
                    Unit::HourMinute => Some(h * 100 + mi),
                    Unit::HourSecond => Some((h * 100 + mi) * 100 + s),
                    Unit::MinuteSecond => Some(mi * 100 + s),
                    _ => None,
                };
                if let Some(p) = part {
                    return Ok(int(sign * p));
                }
            }
            let (dt, _) = match read(&x) {
                Some(Ok(r)) => r,
                _ => return Ok(bad_value(env, &x.to_string())),
            };
            let (y, m, d) = (dt.y, i64::from(dt.m), i64::from(dt.d));
            let (h, mi, s, us) = (
                i64::from(dt.h),
                i64::from(dt.mi),
                i64::from(dt.s),
                i64::from(dt.us),
            );
            int(match unit {
                Unit::Year => y,
                Unit::Quarter => (m + 2) / 3,
                Unit::Month => m,
                Unit::Week => calc_week(&dt, week_mode(0)).0,
                Unit::Day => d,
                Unit::Hour => h,
                Unit::Minute => mi,
                Unit::Second => s,
                Unit::Microsecond => us,
                Unit::YearMonth => y * 100 + m,
                Unit::DayHour => d * 100 + h,
                Unit::DayMinute => (d * 100 + h) * 100 + mi,
                Unit::DaySecond => ((d * 100 + h) * 100 + mi) * 100 + s,
                Unit::DayMicrosecond => (((d * 100 + h) * 100 + mi) * 100 + s) * 1_000_000 + us,
                Unit::HourMinute => h * 100 + mi,
                Unit::HourSecond => (h * 100 + mi) * 100 + s,
                Unit::HourMicrosecond => ((h * 100 + mi) * 100 + s) * 1_000_000 + us,
                Unit::MinuteSecond => mi * 100 + s,
                Unit::MinuteMicrosecond => (mi * 100 + s) * 1_000_000 + us,
                Unit::SecondMicrosecond => s * 1_000_000 + us,
            })
        }
        DtFn::CastDateTime(fsp) => {
            let x = arg(0);
            let (mut dt, _) = match (&x, read(&x)) {
                // A TIME is today's date plus the time (days carried), as
                // MySQL casts one.
                (Value::Time(t), _) => match time_on_today(*t) {
                    Some(dt) => (dt, true),
                    None => return Ok(Value::Null),
                },
                (_, Some(Ok(r))) => r,
                (_, Some(Err(_))) => return Ok(bad_value(env, &x.to_string())),
                (_, None) => return Ok(Value::Null),
            };
            // Rounding the fraction may carry into the second: go through
            // the packed form, whose order is chronological.
            let packed = pack_datetime(dt.packed_date(), dt.h, dt.mi, dt.s, 0);
            let us = crate::convert::round_micros(i64::from(dt.us), fsp);
            if us >= 1_000_000 {
                return call(
                    DtFn::AddInterval(Unit::Second, false),
                    vec![Value::DateTime(packed), Value::Int(1)],
                    env,
                );
            }
            dt.us = us as u32;
            dt.value(false)
        }
        DtFn::Year | DtFn::Month | DtFn::Day | DtFn::Quarter | DtFn::Date => {
            let x = arg(0);
            let (dt, _) = match read(&x) {
                Some(Ok(r)) => r,
                _ => return Ok(bad_value(env, &x.to_string())),
            };
            match f {
                DtFn::Year => int(dt.y),
                DtFn::Month => int(i64::from(dt.m)),
                DtFn::Day => int(i64::from(dt.d)),
                DtFn::Quarter => int((i64::from(dt.m) + 2) / 3),
                _ => dt.value(true),
            }
        }
        // A TIME where a date-time is needed: today's date plus the time,
        // as MySQL reads one.
        _ if matches!(a.first(), Some(Value::Time(_))) => {
            let Some(Value::Time(t)) = a.first() else {
                return Ok(Value::Null);
            };
            let Some(dt) = time_on_today(*t) else {
                return Ok(Value::Null);
            };
            let mut b = a.clone();
            if let Some(first) = b.first_mut() {
                *first = dt.value(false);
            }
            return call(f, b, env);
        }
        _ => {
            // The rest need a whole date.
            let Some((dt, _)) = full_date(&arg(0), env) else {
                return Ok(Value::Null);
            };
            let mode = || -> Option<i64> {
                match a.get(1) {
                    Some(Value::Null) => None,
                    Some(v) => to_i64(v),
                    None => Some(0),
                }
            };
            match f {
                DtFn::Week => match mode() {
                    Some(md) => int(calc_week(&dt, week_mode(md)).0),
                    None => Value::Null,
                },
                DtFn::WeekOfYear => int(calc_week(&dt, week_mode(3)).0),
                DtFn::YearWeek => match mode() {
                    Some(md) => {
                        let (w, y) = calc_week(&dt, week_mode(md) | 2);
                        int(y * 100 + w)
                    }
                    None => Value::Null,
                },
                DtFn::DayOfWeek => int(weekday_of(dt.daynr(), true) + 1),
                DtFn::WeekDay => int(weekday_of(dt.daynr(), false)),
                DtFn::DayOfYear => int(dt.daynr() - Dt::date(dt.y, 1, 1).daynr() + 1),
                DtFn::DayName => Value::Str(
                    DAY_NAMES[weekday_of(dt.daynr(), false) as usize]
                        .as_bytes()
                        .to_vec(),
                ),
                DtFn::MonthName => Value::Str(month_name(dt.m).as_bytes().to_vec()),
                DtFn::LastDay => Dt::date(dt.y, dt.m, days_in_month(dt.y, dt.m)).value(true),
                DtFn::ToDays => int(dt.daynr()),
                DtFn::DateFormat => Value::Str(format(&dt, &text_of(&arg(1)))),
                _ => Value::Null,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers_match_to_days() {
        assert_eq!(Dt::date(1970, 1, 1).daynr(), 719_528);
        assert_eq!(Dt::date(2007, 10, 7).daynr(), 733_321);
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn strings_read_as_mysql_reads_them() {
        assert_eq!(
            parse_dt_str(b"2024-1-5").map(|r| r.0),
            Some(Dt::date(2024, 1, 5))
        );
        assert_eq!(
            parse_dt_str(b"240105").map(|r| r.0),
            Some(Dt::date(2024, 1, 5))
        );
        assert_eq!(parse_dt_str(b"2024-02-30"), None);
        assert_eq!(
            parse_dt_str(b"2024-02-29 10:11:12.5").map(|r| r.0.us),
            Some(500_000)
        );
    }
}
