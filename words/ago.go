package words

import "time"

// Ago says how long ago something happened, d before now, in l: "just
// now" under a minute, then whole minutes, then whole hours ("4 minutes
// ago", "4 分钟前").
func Ago(l Lang, d time.Duration) string {
	switch {
	case d < time.Minute:
		return Text(l, AgoJustNow)
	case d < 2*time.Minute:
		return Text(l, AgoMinute)
	case d < time.Hour:
		return Text(l, AgoMinutes, int(d/time.Minute))
	case d < 2*time.Hour:
		return Text(l, AgoHour)
	}
	return Text(l, AgoHours, int(d/time.Hour))
}

// Span says a length of time in l, in its largest whole unit: "10 min",
// "2 h", "90 s" ("10 分钟", "2 小时", "90 秒").
func Span(l Lang, d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return Text(l, SpanHours, int(d/time.Hour))
	case d >= time.Minute && d%time.Minute == 0:
		return Text(l, SpanMinutes, int(d/time.Minute))
	}
	return Text(l, SpanSeconds, int((d+time.Second/2)/time.Second))
}
