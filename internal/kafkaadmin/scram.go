package kafkaadmin

import (
	"crypto/sha256"
	"crypto/sha512"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

// scramClient adapts xdg-go/scram to Sarama's SCRAMClient.
type scramClient struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (s *scramClient) Begin(user, password, authzID string) error {
	c, err := s.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	s.conv = c.NewConversation()
	return nil
}

func (s *scramClient) Step(challenge string) (string, error) { return s.conv.Step(challenge) }
func (s *scramClient) Done() bool                             { return s.conv.Done() }

func scramGenerator(mechanism string) func() sarama.SCRAMClient {
	hash := scram.HashGeneratorFcn(sha256.New)
	if mechanism == sarama.SASLTypeSCRAMSHA512 {
		hash = sha512.New
	}
	return func() sarama.SCRAMClient { return &scramClient{hash: hash} }
}
