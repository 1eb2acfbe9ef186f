package api

// Attachment kinds of AttachmentInfo and MessageAttachment.
const (
	// AttachmentImage is a picture (JPEG, PNG, GIF or WebP): a model that
	// accepts images sees it; others get its name and where it is saved.
	AttachmentImage = "image"
	// AttachmentFile is any other file: the model is told its name, type,
	// size and workspace path (its tools can read it).
	AttachmentFile = "file"
	// AttachmentAudio is a recording (Ogg, WebM, WAV, MP3, M4A, FLAC: the
	// page's microphone records WebM/Opus or Ogg/Opus): it is transcribed
	// by the speech-to-text model and the words handled as typed text.
	AttachmentAudio = "audio"
)

// AttachmentUpload is the body of POST /api/v1/threads/{thread}/attachments:
// one file, base64-encoded in Data (the API takes JSON bodies only, so an
// upload passes the same access rules as every other write).
type AttachmentUpload struct {
	Name string `json:"name"`
	// MediaType is what the browser says the file is; images are
	// recognised from their content whatever it says.
	MediaType string `json:"media_type,omitempty"`
	Data      []byte `json:"data"`
}

// AttachmentInfo is a saved upload: the answer to POST …/attachments.
type AttachmentInfo struct {
	// Path is the file's slash-separated path in the workspace
	// ("web/<session>/20260101-120000-3f2a-photo.png"): what a message
	// names to attach it.
	Path      string `json:"path"`
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
}

// AttachmentRef names an uploaded file in a message (the WebSocket
// "message" frame, POST …/messages).
type AttachmentRef struct {
	Path string `json:"path"`
}

// MessageAttachment is a file attached to a stored message (GET
// …/messages), shown as a chip.
type MessageAttachment struct {
	Kind      string `json:"kind"`
	Path      string `json:"path"`
	Name      string `json:"name"`
	MediaType string `json:"media_type,omitempty"`
}
