//go:build integration

package image_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// --- the OCI layout ------------------------------------------------------

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	} `json:"platform"`
}

type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
}

type entry struct {
	typ      byte
	mode     fs.FileMode
	uid, gid int
	size     int64
	link     string
	data     []byte // regular files
}

type ociImage struct {
	config     imageConfig
	files      map[string]entry
	layers     int
	compressed int64
	unpacked   int64
}

func readOCI(t *testing.T, dir, tag string) ociImage {
	t.Helper()
	blob := func(d ociDescriptor) []byte {
		data, err := os.ReadFile(filepath.Join(dir, "blobs", strings.Replace(d.Digest, ":", "/", 1)))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	var index struct{ Manifests []ociDescriptor }
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	var top *ociDescriptor
	for i, m := range index.Manifests {
		if m.Annotations["org.opencontainers.image.ref.name"] == tag {
			top = &index.Manifests[i]
		}
	}
	if top == nil {
		t.Fatalf("no image tagged %s in the OCI layout: %+v", tag, index.Manifests)
	}
	man := *top
	if man.MediaType == "application/vnd.oci.image.index.v1+json" {
		var list struct{ Manifests []ociDescriptor }
		if err := json.Unmarshal(blob(man), &list); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, m := range list.Manifests {
			if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == "amd64" {
				man, found = m, true
			}
		}
		if !found {
			t.Fatalf("no linux/amd64 image in the index: %+v", list.Manifests)
		}
	}
	var manifest struct {
		Config ociDescriptor
		Layers []ociDescriptor
	}
	if err := json.Unmarshal(blob(man), &manifest); err != nil {
		t.Fatal(err)
	}
	img := ociImage{files: map[string]entry{}, layers: len(manifest.Layers)}
	if err := json.Unmarshal(blob(manifest.Config), &img.config); err != nil {
		t.Fatal(err)
	}
	for _, l := range manifest.Layers {
		img.compressed += l.Size
		zr, err := gzip.NewReader(bytes.NewReader(blob(l)))
		if err != nil {
			t.Fatalf("layer %s: %v", l.Digest, err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("layer %s: %v", l.Digest, err)
			}
			name := strings.TrimSuffix(path.Clean(strings.TrimPrefix(h.Name, "./")), "/")
			e := entry{typ: h.Typeflag, mode: fs.FileMode(h.Mode).Perm(), uid: h.Uid, gid: h.Gid, size: h.Size, link: h.Linkname}
			if h.Typeflag == tar.TypeReg {
				if e.data, err = io.ReadAll(tr); err != nil {
					t.Fatal(err)
				}
				img.unpacked += h.Size
			}
			img.files[name] = e
		}
	}
	return img
}

func checkContents(t *testing.T, img ociImage) {
	allowedDirs := map[string]bool{}
	for f := range wantFiles {
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			allowedDirs[d] = true
		}
	}
	for name, e := range img.files {
		if e.uid != 0 || e.gid != 0 {
			t.Errorf("%s owned by %d:%d, want root: the guard's user must not own anything", name, e.uid, e.gid)
		}
		if e.mode&0o022 != 0 {
			t.Errorf("%s mode %v is writable by group or others", name, e.mode)
		}
		switch {
		case e.typ == tar.TypeDir && allowedDirs[name]:
		case e.typ == tar.TypeReg && wantFiles[name] != 0:
			if e.mode != wantFiles[name] {
				t.Errorf("%s mode %v, want %v", name, e.mode, wantFiles[name])
			}
		default:
			t.Errorf("unexpected entry %s (type %q, mode %v, link %q)", name, e.typ, e.mode, e.link)
		}
	}
	for f := range wantFiles {
		if _, ok := img.files[f]; !ok {
			t.Errorf("%s missing", f)
		}
	}

	for _, f := range []string{"etc/passwd", "etc/group"} {
		lines := strings.Split(strings.TrimSpace(string(img.files[f].data)), "\n")
		if len(lines) != 1 {
			t.Errorf("%s has %d entries, want only 65532's: %q", f, len(lines), lines)
			continue
		}
		fields := strings.Split(lines[0], ":")
		id := fields[2]
		if len(fields) < 3 || id != "65532" || (f == "etc/passwd" && fields[3] != "65532") {
			t.Errorf("%s entry %q is not for 65532:65532", f, lines[0])
		}
	}

	pool := x509.NewCertPool()
	if ca := img.files["etc/ssl/certs/ca-certificates.crt"].data; !pool.AppendCertsFromPEM(ca) || !bytes.Contains(ca, []byte("BEGIN CERTIFICATE")) {
		t.Error("ca-certificates.crt holds no PEM certificates")
	}

	bin := img.files["usr/bin/kafka-disk-guard"].data
	ef, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("the binary is not ELF: %v", err)
	}
	if ef.Machine != elf.EM_X86_64 {
		t.Errorf("binary machine %v, want x86-64", ef.Machine)
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (%v): it cannot run on an empty base", p.Type)
		}
	}
}
