// Attachments: each file goes up as a chunked upload (file/upload/begin, chunk,
// commit) with a progress bar, and its file entry waits to go with the next prompt.

function b64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

// upload sends file for sessionId; progress(fraction) is told as chunks are taken.
export async function upload(link, sessionId, file, progress) {
  const begin = await link.call("file/upload/begin", { session_id: sessionId, size_bytes: file.size, filename: file.name });
  if (file.size > begin.max_bytes) throw new Error(`${file.name} is over ${begin.max_bytes} bytes`);
  let offset = 0;
  progress(0);
  while (offset < file.size) {
    const end = Math.min(offset + begin.chunk_bytes, file.size);
    const bytes = new Uint8Array(await file.slice(offset, end).arrayBuffer());
    const r = await link.call("file/upload/chunk", { upload_id: begin.upload_id, offset, data_b64: b64(bytes) });
    offset = r.received_bytes;
    progress(offset / file.size);
  }
  return link.call("file/upload/commit", { upload_id: begin.upload_id });
}
