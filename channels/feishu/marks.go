package feishu

import "github.com/hitlbot/hitlbot/channels/internal/marks"

// Marks is where webhook mode remembers the requests it accepted (their
// timestamp, nonce and signature; Config.Marks). approval.Store implements
// it.
type Marks = marks.Store
